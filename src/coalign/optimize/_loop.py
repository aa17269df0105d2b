"""The optimization loop: one component at a time, local rewards, a strict validation gate.

Each iteration draws a component uniformly, lets the local optimizer of its parameter kind propose
a new value with every other slot fixed, validates the whole system on held-out inputs with
``run_from`` (only the changed component and what is downstream re-run), and accepts only on a
strictly higher summed reward. After an accepted step the local rewards are adapted on the pairs
of a small fresh batch (stage 2); a per-instance selector keeps the frozen reward it was validated
with (``_selectors``). Every decision is written to the run store's step ledger; the
reward model is checkpointed per step, so a killed run resumes where its ledger ends and, with
the response cache, repeats no LLM call.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from coalign.config import SystemConfig
from coalign.costs import CostAccount
from coalign.data._base import Example
from coalign.errors import ConfigError, StoreError
from coalign.optimize._alignment import cross_validated_alignment
from coalign.optimize._base import BaseLocalOptimizer, LocalContext
from coalign.optimize._choice import POLICY, RewardSelector
from coalign.optimize._coupled import Variant, variant_key
from coalign.optimize._kinds import RolloutAsk, kind_of
from coalign.optimize._ledger import Ledger, checked_meta, checked_steps
from coalign.optimize._local import local_optimizers
from coalign.optimize._proposing import Proposing
from coalign.optimize._selectors import (
    FrozenRewards,
    Policies,
    policies_of,
    policy_suffix,
    selectors_json,
)
from coalign.optimize._settings import LoopSettings, window
from coalign.pairs import to_jsonable
from coalign.rewards import LocalRewardModel, load_reward_model, save_reward_model
from coalign.rollouts import RolloutSpec, collect_pairs
from coalign.runtime import Runtime
from coalign.store import RunStore
from coalign.task import Task
from coalign.trace import Trace


@dataclass
class StepRecord:
    step: int
    component: str
    param: str
    accepted: bool
    val_before: float
    val_after: float | None
    value: Any
    reason: str
    seconds: float
    reset: tuple[str, ...] = ()  # sibling params put back at their starting values with it


REJECTED = "validation did not improve"
REJECTED_EARLY = "validation stopped early: worse so far"  # see Gate.early_reject


class Optimizer(Proposing):
    def __init__(self, task: Task, train: Sequence[Example], val: Sequence[Example],
                 runtime: Runtime, store: RunStore, reward: LocalRewardModel,
                 settings: LoopSettings | None = None,
                 optimizers: dict[str, BaseLocalOptimizer] | None = None) -> None:
        if not train or not val:
            raise ConfigError("optimization needs non-empty train and validation sets")
        self.task, self.system = task, task.system
        self.train, self.val = list(train), list(val)
        self.runtime, self.store, self.reward = runtime, store, reward
        self.s = settings or LoopSettings()
        self.optimizers = optimizers or local_optimizers(self.s)
        names = self.s.components or [c.name for c in self.system.components if c.params]
        self.targets = [(c, p) for c in names for p in self.system.component(c).params]
        if not self.targets:
            raise ConfigError(f"system {self.system.name!r} has no parameters to optimize")
        for c, p in self.targets:  # refused now, not when the param is first drawn
            param = self.system.component(c).params[p]
            kind = kind_of(self.s.kinds, param, f"{c}.{p}")
            if kind.name not in self.optimizers:
                raise ConfigError(f"no local optimizer for param kind {kind.name!r} ({c}.{p}); "
                                  f"have {sorted(self.optimizers)}")
            if param.scope == "per_instance" and not kind.per_instance:
                raise ConfigError(f"{c}.{p}: a {kind.name!r} param cannot be per_instance (no "
                                  "selector picks its values per input); use scope 'global'")
        self.account = CostAccount([c.name for c in self.system.components])
        self.config = self.system.default_config()
        # per-instance params chosen by the LRF -> digest of the frozen reward each one reads
        self.policies: dict[tuple[str, str], str] = {}
        self.frozen = FrozenRewards(store.run_dir, reward.backbone)
        self.val_traces: dict[str, Trace] = {}
        self.history: list[StepRecord] = []
        self._ckpt: str | None = None  # current reward-model checkpoint, relative to run dir
        self._start: int | None = None  # first iteration to run; set by prepare()
        self._scored: list[tuple[Any, float]] = []  # this step's candidates, by local reward
        self._variants: list[dict[str, Any]] = []  # a switch's variants, by local reward
        self._inputs: tuple[tuple[int, str], list[dict[str, Any]]] | None = None  # memo
        self._ctx: tuple[tuple[int, str, str], LocalContext] | None = None
        # (component, param) -> values the gate rejected since the last accepted step
        self._rejected: dict[tuple[str, str], set[str]] = {}

    # -- public ---------------------------------------------------------------------------------

    def prepare(self) -> None:
        """Resume from the ledger, or run stage 1; then score the current config on val."""
        if self._start is not None:
            return
        self._start = self._resume()
        if self._start == 0 and not self.store.get_meta("stage1_done"):
            self._stage1()
        self._validate_current()

    def history_so_far(self) -> list[StepRecord]:
        """Steps already in the ledger (from an earlier, interrupted run)."""
        return [StepRecord(t, r["component"], r["param"], st == "accepted", r["val_before"],
                           r["val_after"], r["value"], r["reason"], r["seconds"],
                           tuple(r.get("reset", ())))
                for t, st, r in self.store.steps()]

    def run(self, on_step: Callable[[StepRecord], None] | None = None) -> list[StepRecord]:
        self.prepare()
        for t in range(self._start or 0, self.s.iterations):
            record = self._iteration(t)
            self.history.append(record)
            if on_step is not None:
                on_step(record)
        return self.history

    @property
    def val_score(self) -> float:
        return sum(t.reward or 0.0 for t in self.val_traces.values()) / len(self.val_traces)

    def ledger(self) -> Ledger:
        phases = sorted(self.account.executed)
        usage = {p: self.account.total_usage(p) for p in phases}
        return Ledger({p: self.account.equivalent_runs(p) for p in phases},
                      {p: u.calls for p, u in usage.items()},
                      {p: u.cache_hits for p, u in usage.items()})

    # -- phases -------------------------------------------------------------------------------

    def runtime_for(self, policies: Policies) -> Runtime:
        selectors = dict(self.runtime.selectors)
        selectors.update({key: RewardSelector(self.frozen.get(digest),
                                              self.s.choice_costs.get(key), self.s.cost_weight)
                          for key, digest in policies.items()})
        return dataclasses.replace(self.runtime, selectors=selectors)

    def _specs(self, component: str) -> list[RolloutSpec]:
        """Each param's rollout specs, as its kind's entry says (``_kinds``)."""
        specs = []
        for name, param in self.system.component(component).params.items():
            current = self.config[component][name]
            optimizer = self.optimizers.get(param.kind)
            rng = random.Random(f"{self.s.seed}:alternatives:{component}.{name}")

            def nearby(k: int, current: Any = current, optimizer: Any = optimizer,
                       rng: random.Random = rng) -> tuple[Any, ...]:
                return optimizer.alternatives(current, rng, k) if optimizer else ()

            specs += self.s.kinds[param.kind].rollouts(RolloutAsk(
                name, param, current, self.s.rollout_n, self.s.temperature,
                self.s.text_alternatives, nearby))
        return specs

    def _collect(self, examples: Sequence[Example], tag: str) -> list:
        rt = self.runtime_for(self.policies)
        base = {e.id: self.system.run(e.id, e.inputs, self.config, rt) for e in examples}
        self.account.add_traces(tag, base.values())
        pairs = []
        for comp in dict.fromkeys(c for c, _ in self.targets):
            specs = self._specs(comp)
            if not specs:
                continue
            # one collection per component: its specs' candidates are compared with each other
            col = collect_pairs(self.task, comp, examples, self.config, rt, specs,
                                store=self.store, tag=tag, base_traces=base)
            self.account.add_traces(tag, col.traces)
            pairs += col.all
        return pairs

    def _checkpoint(self, name: str) -> str:
        """Save the reward model under its own name (earlier checkpoints stay valid)."""
        path = self.store.run_dir / "lrf" / name
        save_reward_model(self.reward, path)
        self._ckpt = str(path.relative_to(self.store.run_dir))
        return self._ckpt

    def _stage1(self) -> None:
        pairs = self._collect(self.train, "lrf_train")
        alignment = cross_validated_alignment(self.reward, pairs)
        if alignment:
            self.store.set_meta("lrf_alignment", alignment)
        if any(not p.is_tie for p in pairs):  # all ties: no head; iterations then say so
            self.reward.fit(pairs)
        with self.store.transaction():
            self.store.set_meta("stage1_checkpoint", self._checkpoint("stage1"))
            self.store.set_meta("stage1_account", self.account.to_json())
            self.store.set_meta("stage1_done", True)

    def _resume(self) -> int:
        """Restore config, policies, costs and reward model from the last ledger entry."""
        steps = checked_steps(self.store)
        self._ckpt = checked_meta(self.store, "stage1_checkpoint", str)
        account = checked_meta(self.store, "stage1_account", dict)
        for _, state, rec in steps:  # rejections since the last accept still stand
            if state == "accepted":
                self._rejected = {}
            elif rec["reason"] in (REJECTED, REJECTED_EARLY):
                self._rejected.setdefault((rec["component"], rec["param"]), set()).add(
                    variant_key(rec["value"], rec.get("reset", ())))
        if steps:
            last = steps[-1][2]
            self.config = SystemConfig.from_json(self.system, last["config"])
            try:
                self.policies = policies_of(last)
            except StoreError as exc:
                raise StoreError(f"run store {self.store.run_dir}: {exc}") from None
            self._ckpt, account = last["lrf_checkpoint"], last["account"]
        if account:
            self.account = CostAccount.from_json(account)
        if self._ckpt:
            self.reward = load_reward_model(self.store.inside(self._ckpt),
                                            self.reward.backbone)
        return steps[-1][0] + 1 if steps else 0

    def _validate_current(self) -> None:
        rt = self.runtime_for(self.policies)
        for e in self.val:
            trace = self.store.get_trace("val", e.id, self._key(self.config, self.policies))
            if trace is None:
                trace = self.task.score(self.system.run(e.id, e.inputs, self.config, rt), e)
                self.account.add_traces("validation", [trace])
                trace.config_digest = self._key(self.config, self.policies)
                self.store.put_trace("val", trace)
            self.val_traces[e.id] = trace

    @staticmethod
    def _key(config: SystemConfig, policies: Policies) -> str:
        return config.digest + policy_suffix(policies)

    # -- one iteration ----------------------------------------------------------------------------

    def _iteration(self, t: int) -> StepRecord:
        t0 = time.perf_counter()
        rng = random.Random(f"{self.s.seed}:step:{t}")
        # A component whose stage-1 pairs were all ties has no local reward yet, and one whose
        # reward ranked held-out pairs no better than chance would pick candidates by noise:
        # draw among the others (adaptation may add a head later) and spend no validation on it.
        names = sorted({c for c, _ in self.targets})
        scorable = [c for c in names if self.reward.can_score(c)]
        ready = [c for c in scorable if self._aligned(c)]
        if not ready:
            reason = (f"no local reward ranks held-out pairs above {self.s.min_alignment:g}"
                      if scorable else "no local reward yet: every stage-1 pair was a tie")
            return self._record(t, names[0], self.targets[0][1], False, self.val_score, None,
                                None, reason, t0)
        component = rng.choice(ready)
        param = rng.choice([p for c, p in self.targets if c == component])
        spec = self.system.component(component).params[param]
        before = self.val_score
        config, policies = self.config, dict(self.policies)
        if spec.scope == "per_instance":
            value: Any = self._propose_per_instance(component, param, rng, t)
            if value == POLICY:  # the selector reads the reward as it is now, frozen
                policies[(component, param)] = self.frozen.freeze(self.reward)
            else:
                policies.pop((component, param), None)
                config = self.config.with_value(component, param, value)
        else:
            value = self._propose(component, param, spec.kind, rng, t)
            config = self.config.with_value(component, param, value)
        if config.digest == self.config.digest and policies == self.policies:
            return self._record(t, component, param, False, before, None, value,
                                "no change proposed", t0)
        tried = self._rejected.setdefault((component, param), set())
        picked = (self._couple(component, param, value, config, policies, t)
                  if self.s.kinds[spec.kind].coupled and value != POLICY else Variant(config))
        key = variant_key(value, picked.reset) if picked is not None else None
        if picked is None or key in tried:  # a re-proposal
            return self._record(t, component, param, False, before, None, value,
                                "already rejected under this config", t0)
        config, reset = picked.config, picked.reset
        new_traces = self._validate(component, config, policies)
        checked = [e for e in self.val if e.id in new_traces]
        new_scores = [new_traces[e.id].reward or 0.0 for e in checked]
        old_scores = [self.val_traces[e.id].reward or 0.0 for e in checked]
        complete = len(checked) == len(self.val)
        accepted = complete and self.s.gate.accept(new_scores, old_scores)
        # stopped early: the full-set estimate is the current score plus the paired difference
        after = (sum(new_scores) / len(checked) if complete
                 else before + (sum(new_scores) - sum(old_scores)) / len(checked))
        if accepted:
            for digest in policies.values():  # on disk before a ledger row names it
                self.frozen.save(digest)
            self.config, self.policies, self.val_traces = config, policies, new_traces
            for tr in new_traces.values():
                self.store.put_trace("val", tr)
            fresh = self._fresh_batch(t)
            self.reward.adapt(self._collect(fresh, "adapt"))
            self._checkpoint(f"step{t}")
            self._rejected = {}  # a new config: earlier rejections no longer say anything
        else:
            tried.add(key)
        reason = ("validation improved" if accepted else REJECTED if complete
                  else REJECTED_EARLY)
        return self._record(t, component, param, accepted, before, after, value, reason, t0,
                            checked=len(checked), reset=reset)

    def _aligned(self, component: str) -> bool:
        """Stage 1's cross-validated pairwise accuracy is above ``min_alignment``; a component
        measured on too few pairs (or not at all: too few inputs to cross-validate) passes."""
        measured = (self.store.get_meta("lrf_alignment") or {}).get(component)
        return (measured is None or measured["pairs"] < self.s.min_alignment_pairs
                or measured["accuracy"] > self.s.min_alignment)

    def _validate(self, component: str, config: SystemConfig,
                  policies: Policies) -> dict[str, Trace]:
        """The candidate's val traces, re-running from ``component`` on; stopped at a gate
        checkpoint once the candidate is clearly worse (then only a prefix of val is here)."""
        rt, key = self.runtime_for(policies), self._key(config, policies)
        out: dict[str, Trace] = {}
        done = 0
        for stop in self.s.gate.checkpoints(len(self.val)):
            for e in self.val[done:stop]:
                trace = self.task.score(self.system.run_from(component, self.val_traces[e.id],
                                                             config, rt), e)
                trace.config_digest = key
                out[e.id] = trace
            done = stop
            seen = self.val[:done]
            if done < len(self.val) and self.s.gate.clearly_worse(
                    [out[e.id].reward or 0.0 for e in seen],
                    [self.val_traces[e.id].reward or 0.0 for e in seen]):
                break
        self.account.add_traces("validation", out.values())
        return out

    def _fresh_batch(self, t: int) -> list[Example]:
        return window(self.train, t, self.s.fresh_inputs)

    def _record(self, t: int, component: str, param: str, accepted: bool, before: float,
                after: float | None, value: Any, reason: str, t0: float,
                checked: int = 0, reset: tuple[str, ...] = ()) -> StepRecord:
        rec = StepRecord(t, component, param, accepted, before, after, to_jsonable(value),
                         reason, time.perf_counter() - t0, reset)
        self.store.put_step(t, "accepted" if accepted else "rejected", {
            "component": component, "param": param, "value": rec.value, "reason": reason,
            "reset": list(reset), "variants": self._variants,
            "val_before": before, "val_after": after, "val_checked": checked,
            "seconds": rec.seconds,
            "config": self.config.to_json(), "policies": sorted(self.policies),
            "selectors": selectors_json(self.policies),
            "lrf_checkpoint": self._ckpt, "account": self.account.to_json(),
            "ledger": self.ledger().to_json(),
            # what the local optimizer compared, best first: why it proposed what it did
            "candidates": [{"value": to_jsonable(v), "local_reward": r} for v, r in
                           sorted(self._scored, key=lambda vr: -vr[1])[:10]]})
        self._scored, self._variants = [], []
        return rec
