"""The optimization loop: one component at a time, local rewards, a strict validation gate.

Each iteration draws a component uniformly, lets the local optimizer of its parameter kind propose
a new value with every other slot fixed, validates the whole system on held-out inputs with
``run_from`` (only the changed component and what is downstream re-run), and accepts only on a
strictly higher summed reward. After an accepted step the local rewards are adapted on the pairs
of a small fresh batch (stage 2); a per-instance selector keeps the frozen reward it was validated
with (``_selectors``). With ``proposals: portfolio`` a step may instead be a global one
(``_portfolio``). Every decision is written to the run store's step ledger; the reward model is
checkpointed per step, so a killed run resumes where its ledger ends, repeating no LLM call.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Mapping, Sequence

from coalign.cascade import CANDIDATE_TAG
from coalign.config import SystemConfig
from coalign.costs import CostAccount
from coalign.data import Example
from coalign.errors import ConfigError, StoreError
from coalign.optimize._alignment import cross_validated_alignment
from coalign.optimize._base import BaseLocalOptimizer
from coalign.optimize._carry import carried_of
from coalign.optimize._global_step import ARM_STEPS, arm
from coalign.optimize._kinds import kind_of, rollout_specs
from coalign.optimize._ledger import Ledger, checked_meta, checked_steps
from coalign.optimize._local import local_optimizers
from coalign.optimize._outcome import (
    REJECTED,
    REJECTED_EARLY,
    Outcome,
    StepRecord,
    StepState,
    rejections,
    step_state,
    unchanged_inputs,
    window_indices,
)
from coalign.optimize._portfolio import first_validated, from_ledger
from coalign.optimize._position import Position
from coalign.optimize._selectors import FrozenRewards, Policies, policies_of, selectors_json
from coalign.optimize._settings import LoopSettings, targets
from coalign.optimize._step import StepEnv, fresh_batch, step, trace_key
from coalign.optimize._warm import warm_start
from coalign.pairs import to_jsonable
from coalign.rewards import LocalRewardModel, load_reward_model, save_reward_model
from coalign.rollouts import collect_pairs
from coalign.runtime import Runtime
from coalign.store import RunStore
from coalign.task import Task
from coalign.trace import Trace

# ``progress(phase, done, total)``: an input of a long phase (rollouts, validation) finished
Progress = Callable[[str, int, int], None]

__all__ = ["REJECTED", "REJECTED_EARLY", "Optimizer", "StepRecord"]  # reasons: ``_outcome``


class Optimizer:
    def __init__(self, task: Task, train: Sequence[Example], val: Sequence[Example],
                 runtime: Runtime, store: RunStore, reward: LocalRewardModel,
                 settings: LoopSettings | None = None,
                 optimizers: dict[str, BaseLocalOptimizer] | None = None) -> None:
        if not train or not val:
            raise ConfigError("optimization needs non-empty train and validation sets")
        self.task, self.system = task, task.system
        self.train, self.val = list(train), list(val)
        self.runtime, self.store = runtime, store
        self.s = settings or LoopSettings()
        self.optimizers = optimizers or local_optimizers(self.s)
        self.targets = targets(self.system, self.s.components)
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
        self.frozen = FrozenRewards(store.run_dir, reward.backbone)
        # the run state (``_position``); each committed step replaces it (``Position.after``)
        self.at = Position(self.system.default_config(), {}, {}, frozenset(), reward)
        self.history: list[StepRecord] = []
        self._ckpt: str | None = None  # current reward-model checkpoint, relative to run dir
        self._start: int | None = None  # first iteration to run; set by prepare()
        self.paid: dict[str, int] = {}  # lazy stage 1: component -> step paid before

    # -- public ---------------------------------------------------------------------------------

    @property
    def config(self) -> SystemConfig:
        return self.at.config

    @config.setter
    def config(self, config: SystemConfig) -> None:
        """Start from ``config`` instead of the system's defaults (before ``prepare``)."""
        self.at = dataclasses.replace(self.at, config=config)

    @property
    def policies(self) -> Policies:
        """Per-instance params chosen by the LRF -> digest of the frozen reward each reads."""
        return self.at.policies

    @property
    def val_traces(self) -> Mapping[str, Trace]:
        return self.at.val_traces

    @property
    def reward(self) -> LocalRewardModel:
        return self.at.reward

    def prepare(self, progress: Progress | None = None) -> None:
        """Resume from the ledger, or run stage 1; then score the current config on val.
        ``progress(phase, done, total)`` hears each input finished (rollouts, validation)."""
        if self._start is not None:
            return
        self._start = self._resume()
        if self._start == 0 and self.s.warm_start and self.store.get_meta("warm_start") is None:
            self._warm_start()
        if self._start == 0 and not self.lazy and not self.store.get_meta("stage1_done"):
            self._stage1(progress)
        self._validate_current(progress)
        if self.s.proposals == "portfolio":
            self._first_validated()

    @property
    def lazy(self) -> bool:
        """Stage 1 paid per component before its first local step (the portfolio loop too)."""
        return self.s.stage1 == "lazy" or self.s.proposals == "portfolio"

    def history_so_far(self) -> list[StepRecord]:
        """Steps already in the ledger (from an earlier, interrupted run)."""
        return [StepRecord(t, r["component"], r["param"], st == "accepted", r["val_before"],
                           r["val_after"], r["value"], r["reason"], r["seconds"],
                           tuple(r.get("reset", ())), step_state(t, st, r))
                for t, st, r in self.store.steps()]

    def run(self, on_step: Callable[[StepRecord], None] | None = None, *,
            budget: float | None = None, progress: Progress | None = None) -> list[StepRecord]:
        """Steps until ``iterations``, a settled loop, or (``budget``) once the run has spent
        that many equivalent full-system runs, checked before each step (so a run stopped
        there, or killed after its last step, resumes where it stood and adds nothing).
        ``progress`` hears the inputs of the long phases, as in ``prepare`` (a lazy stage 1's
        rollouts come within a step)."""
        self.prepare(progress)
        steps = self.store.steps()
        if steps and step_state(*steps[-1]) is StepState.SETTLED:
            return self.history  # resumed after it settled: a further step would repeat it
        for t in range(self._start or 0, self.s.iterations):
            if budget is not None and self.account.equivalent_runs() >= budget:
                break
            record = self.iteration(t, progress)
            self.history.append(record)
            if on_step is not None:
                on_step(record)
            if record.state is StepState.SETTLED:
                break  # a fixed point: nothing left to draw until the config changes
        return self.history

    def iteration(self, t: int, progress: Progress | None = None) -> StepRecord:
        """Run step ``t`` from where the run stands and commit its outcome (with a lazy stage 1,
        first the next component's stage-1 rollouts, if one is left)."""
        t0, runs = time.perf_counter(), self.account.equivalent_runs()
        env = self._env()
        if self.s.proposals == "portfolio":
            chosen, local = arm(t, env, self.at, self.paid)
            if chosen in ARM_STEPS:
                return self._commit(t, ARM_STEPS[chosen](t, env, self.at), t0, runs)
            env = dataclasses.replace(env, targets=local)
        if self.lazy:
            self._pay_next(t, env.targets, progress)
        return self._commit(t, step(t, env, self.at), t0, runs)

    def _env(self) -> StepEnv:
        return StepEnv(self.task, self.train, self.val, self.s, self.optimizers, self.targets,
                       self.store, self.account, self.frozen, self.runtime_for)

    @property
    def val_score(self) -> float:
        return self.at.score

    def ledger(self) -> Ledger:
        phases = sorted(self.account.executed)
        usage = {p: self.account.total_usage(p) for p in phases}
        return Ledger({p: self.account.equivalent_runs(p) for p in phases},
                      {p: u.calls for p, u in usage.items()},
                      {p: u.cache_hits for p, u in usage.items()})

    # -- phases -------------------------------------------------------------------------------

    def runtime_for(self, policies: Policies) -> Runtime:
        return self.frozen.runtime(self.runtime, policies, self.s.choice_costs,
                                   self.s.cost_weight)

    def _collect(self, examples: Sequence[Example], tag: str,
                 progress: Progress | None = None,
                 components: Sequence[str] | None = None) -> list:
        """Rollout pairs of ``components`` (default: every target) on ``examples``; none for a
        component the task metric scores (``_exact``)."""
        exact = self._env().exact
        names = [c for c in (dict.fromkeys(c for c, _ in self.targets) if components is None
                             else components) if c not in exact]
        specs = {c: rollout_specs(self.system, self.config, c, self.optimizers, self.s,
                                  only={p for cc, p in self.targets if cc == c})
                 for c in names}
        specs = {c: sp for c, sp in specs.items() if sp}
        if not specs:
            return []
        rt = self.runtime_for(self.policies)
        base = {e.id: self.system.run(e.id, e.inputs, self.config, rt) for e in examples}
        self.account.add_traces(tag, base.values())
        pairs = []
        done, total = 0, len(examples) * len(specs)

        def tick(_: Example) -> None:
            nonlocal done
            done += 1
            if progress is not None:
                progress(f"rollouts ({tag})", done, total)

        for comp, comp_specs in specs.items():
            # one collection per component: its specs' candidates are compared with each other
            col = collect_pairs(self.task, comp, examples, self.config, rt, comp_specs,
                                store=self.store, tag=tag, base_traces=base, on_example=tick)
            self.account.add_traces(tag, col.traces)
            pairs += col.all
        return pairs

    def _checkpoint(self, name: str) -> str:
        """Save the reward model under its own name (earlier checkpoints stay valid)."""
        path = self.store.run_dir / "lrf" / name
        save_reward_model(self.reward, path)
        self._ckpt = str(path.relative_to(self.store.run_dir))
        return self._ckpt

    def _warm_start(self) -> None:
        """A global search from the start config (``_warm``); its best becomes the config
        stage 1 rolls out under, its validation traces the current ones."""
        found = warm_start(self.task, self.val, self.runtime_for(self.policies), self.account,
                           self.s.warm_start, self.targets, self.config, seed=self.s.seed,
                           kinds=self.s.kinds)
        key = trace_key(found.config, self.policies)
        with self.store.transaction():
            for trace in found.traces.values():  # _validate_current reads them: no re-run
                trace.config_digest = key
                self.store.put_trace("val", trace)
            self.store.set_meta("warm_start", {"config": found.config.to_json(),
                                               "score": found.score,
                                               "trials": found.trials_json(),
                                               "account": self.account.to_json()})
        self.at = dataclasses.replace(self.at, config=found.config)

    def _stage1(self, progress: Progress | None = None) -> None:
        pairs = self._collect(self._stage1_inputs(), "lrf_train", progress)
        alignment = cross_validated_alignment(self.reward, pairs)
        if alignment:
            self.store.set_meta("lrf_alignment", alignment)
        if any(not p.is_tie for p in pairs):  # all ties: no head; iterations then say so
            self.reward.fit(pairs)
        with self.store.transaction():
            self.store.set_meta("stage1_checkpoint", self._checkpoint("stage1"))
            self.store.set_meta("stage1_account", self.account.to_json())
            self.store.set_meta("stage1_done", True)

    def _stage1_inputs(self) -> list[Example]:
        return self.train[: self.s.stage1_inputs] if self.s.stage1_inputs else self.train

    def _pay_next(self, t: int, targets: Sequence[tuple[str, str]],
                  progress: Progress | None = None) -> None:
        """Lazy stage 1, before step ``t``: the next component of ``targets`` (in a seeded
        order) without stage-1 pairs gets them under the current config, its head is fitted
        beside the others (from scratch, so a payment made again fits the same head), and its
        alignment joins the others'. A payment counts once step ``t``'s row is written (or,
        before any row, once recorded): one killed before it is paid again, from the response
        cache."""
        order = list(dict.fromkeys(c for c, _ in self.targets))
        random.Random(f"{self.s.seed}:stage1").shuffle(order)
        mine = {c for c, _ in targets} - self._env().exact  # the metric needs no rollouts
        todo = [c for c in order if c not in self.paid and c in mine]
        if not todo or t in self.paid.values():
            return
        pairs = self._collect(self._stage1_inputs(), "lrf_train", progress,
                              components=todo[:1])
        alignment = {**(self.store.get_meta("lrf_alignment") or {}),
                     **cross_validated_alignment(self.reward, pairs)}
        tied = set(self.store.get_meta("stage1_tied") or [])
        if any(not p.is_tie for p in pairs):
            self.reward.fit(pairs, keep=True)
        else:  # all ties: no head, and it is not drawn
            tied.add(todo[0])
        self.paid[todo[0]] = t
        with self.store.transaction():
            self.store.set_meta("lrf_alignment", alignment)
            self.store.set_meta("stage1_paid", self.paid)
            self.store.set_meta("stage1_tied", sorted(tied))
            self.store.set_meta("stage1_checkpoint", self._checkpoint(f"stage1-{todo[0]}"))
            self.store.set_meta("stage1_account", self.account.to_json())

    def _resume(self) -> int:
        """Restore config, policies, costs and reward model from the last ledger entry."""
        steps = checked_steps(self.store)
        self._ckpt = checked_meta(self.store, "stage1_checkpoint", str)
        account = checked_meta(self.store, "stage1_account", dict)
        last = steps[-1][2] if steps else None
        try:  # rejections since the last accept still stand, and the selectors in place
            at = dataclasses.replace(
                self.at, rejected=rejections(steps),
                unchanged=unchanged_inputs(steps, len(self.train), self.s.search_size),
                policies=policies_of(last) if last else {})
        except StoreError as exc:
            raise StoreError(f"run store {self.store.run_dir}: {exc}") from None
        warm = checked_meta(self.store, "warm_start", dict)
        if last:
            at = dataclasses.replace(at, config=SystemConfig.from_json(self.system,
                                                                       last["config"]))
            self._ckpt, account = last["lrf_checkpoint"], last["account"]
        elif warm:  # killed after the warm start, before a step: it is not redone
            at = dataclasses.replace(at, config=SystemConfig.from_json(self.system,
                                                                       warm["config"]))
            account = account or warm["account"]
        arms, validated = from_ledger(self.system, steps)  # the portfolio loop's records
        at = dataclasses.replace(at, arms=arms, validated=validated,
                                 carried=carried_of(self.system, steps))  # ``_carry``
        if account:
            self.account = CostAccount.from_json(account)
        if self._ckpt:
            at = dataclasses.replace(at, reward=load_reward_model(
                self.store.inside(self._ckpt), at.reward.backbone, at.reward.checks))
        self.at = at
        # lazy stage 1: the payments the restored reward holds (before the last row, if any)
        paid = checked_meta(self.store, "stage1_paid", dict) or {}
        self.paid = {c: int(i) for c, i in paid.items() if not steps or i <= steps[-1][0]}
        return steps[-1][0] + 1 if steps else 0

    def _validate_current(self, progress: Progress | None = None) -> None:
        rt = self.runtime_for(self.policies)
        traces: dict[str, Trace] = {}
        for i, e in enumerate(self.val):
            if progress is not None:
                progress("validating the current config", i, len(self.val))
            key = trace_key(self.config, self.policies)
            trace = self.store.get_trace("val", e.id, key)
            if trace is None:
                trace = self.task.score(self.system.run(e.id, e.inputs, self.config, rt), e)
                self.account.add_traces("validation", [trace])
                trace.config_digest = key
                self.store.put_trace("val", trace)
            traces[e.id] = trace
        self.at = dataclasses.replace(self.at, val_traces=traces)
        if progress is not None:
            progress("validating the current config", len(self.val), len(self.val))

    def _first_validated(self) -> None:
        """The portfolio's first validated config, the one the run started validating."""
        first = first_validated(self.store, self.system, self.config,
                                [self.val_traces[e.id] for e in self.val])
        self.at = dataclasses.replace(self.at, validated=(first, *self.at.validated))

    def _commit(self, t: int, out: Outcome, t0: float, runs: float) -> StepRecord:
        """Apply the step's outcome to the run (an accepted proposal becomes the config and the
        rewards adapt on a fresh batch; a rejected one is remembered), then write its ledger
        row, whole, after everything it names is on disk."""
        p = out.proposal
        # the step's runs, stage-1 payment included; rounded, so a resumed run's account (read
        # back from JSON) records the very figure an uninterrupted one did
        spent = round(self.account.equivalent_runs() - runs, 9)
        self.at = self.at.after(out, window_indices(t, len(self.train), self.s.search_size),
                                spent)
        if out.accepted and p is not None:
            for digest in p.policies.values():  # on disk before a ledger row names it
                self.frozen.save(digest)
            for tr in out.traces.values():
                self.store.put_trace("val", tr)
            # the portfolio loop adapts only the components it has paid stage-1 pairs for
            paid = list(self.paid) if self.s.proposals == "portfolio" else None
            if paid is None or paid:
                self.reward.adapt(self._collect(fresh_batch(self._env(), t), "adapt",
                                                components=paid))
            self._checkpoint(f"step{t}")
        elif out.val_rewards:  # validated in full and rejected: a cascade's fallback
            for tr in out.traces.values():
                self.store.put_trace(CANDIDATE_TAG, tr)
        rec = StepRecord(t, out.component, out.param, out.accepted, out.before, out.after,
                         to_jsonable(out.value), out.why, time.perf_counter() - t0, out.reset,
                         out.state)
        self.store.put_step(t, "accepted" if out.accepted else "rejected", {
            **out.row(), "seconds": rec.seconds, "spent": spent,
            "config": self.config.to_json(), "policies": sorted(self.policies),
            "selectors": selectors_json(self.policies),
            "lrf_checkpoint": self._ckpt, "account": self.account.to_json(),
            "ledger": self.ledger().to_json()})
        return rec
