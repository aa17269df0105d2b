"""Global-reward REINFORCE baseline: one factorised policy over the whole joint configuration.

Every ``Choice`` (a per-instance one as one global option) gets softmax logits over its options,
every ``Text`` softmax logits over a small pool of instructions (the current one and its
``EDITS``), and every ``Weights`` param of a ``PolicyComponent`` is trained as that component's
own stochastic policy. Each step samples one configuration for a minibatch of train examples,
runs the FULL system, and moves every slot along the REINFORCE gradient of the global reward
against a running baseline. There is no per-component signal: one noisy scalar per full run
must credit every slot at once — why the reference finds REINFORCE needs more than 3x the data
of local rewards.

Same budget contract as ``random_search``: everything, the final validation included, is counted
in equivalent full-system runs (phase ``baseline_search``) and never exceeds ``budget_runs``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from coalign.component import PolicyComponent
from coalign.config import SystemConfig
from coalign.costs import CostAccount
from coalign.data import Example
from coalign.errors import ConfigError
from coalign.optimize._baselines import OnTrial, SearchResult, _trial
from coalign.optimize._choice import softmax
from coalign.optimize._kinds import KINDS, ParamKind, kind_of
from coalign.optimize._weights import policy_of, policy_step, snapshot
from coalign.rewards import single_thread
from coalign.runtime import Runtime, Sampling
from coalign.system import System
from coalign.task import Task


@dataclass
class ReinforceResult(SearchResult):
    curve: list[float] = field(default_factory=list)  # mean train reward of each minibatch
    probs: dict[str, list[float]] = field(default_factory=dict)  # "comp.param" -> final policy


class RunningBaseline:
    """Advantages of rewards against an exponential moving mean and scale of earlier ones.

    The first call only sets the mean (no earlier reward to compare with); until a spread has been
    seen, an advantage is just the sign of the gap. Advantages are clipped to ±``limit``.
    """

    def __init__(self, decay: float = 0.9, limit: float = 3.0) -> None:
        self.decay, self.limit = decay, limit
        self.mean: float | None = None
        self.var = 0.0

    def advantages(self, rewards: Sequence[float]) -> np.ndarray:
        r = np.asarray(rewards, dtype=np.float64)
        if self.mean is None:
            self.mean = float(r.mean())
            return np.zeros_like(r)
        dev = r - self.mean
        scale = math.sqrt(self.var)
        adv = dev / scale if scale > 1e-8 else np.sign(dev)
        self.mean = self.decay * self.mean + (1 - self.decay) * float(r.mean())
        self.var = self.decay * self.var + (1 - self.decay) * float((dev ** 2).mean())
        return np.clip(adv, -self.limit, self.limit)


@dataclass
class _Categorical:
    """Softmax policy over the options of one global Choice or Text slot."""

    component: str
    param: str
    options: list[Any]
    logits: np.ndarray

    def probs(self) -> np.ndarray:
        return np.asarray(softmax(list(self.logits)))

    def sample(self, rng: random.Random) -> int:
        return rng.choices(range(len(self.options)), weights=list(self.probs()))[0]

    def update(self, index: int, advantage: float, lr: float) -> None:
        grad = -self.probs()  # ∇ log softmax(a) = onehot(a) − p
        grad[index] += 1.0
        self.logits = self.logits + lr * advantage * grad


@dataclass
class _Net:
    """A ``Weights`` slot trained as its component's policy."""

    component: str
    param: str
    policy: PolicyComponent
    module: torch.nn.Module
    optimizer: torch.optim.Optimizer


def _slots(task: Task, names: Sequence[str], weights_lr: float,
           kinds: Mapping[str, ParamKind]) -> tuple[list[_Categorical], list[_Net]]:
    """A softmax slot per param whose kind lists values for one (a choice's options, a text's
    candidates or edits of its start), a policy network per ``network`` kind (weights)."""
    system, default = task.system, task.system.default_config()
    cats: list[_Categorical] = []
    nets: list[_Net] = []
    for comp in names:
        for pname, spec in system.component(comp).params.items():
            kind = kind_of(kinds, spec, f"reinforce_search: {comp}.{pname}")
            options = kind.policy_values(spec, default[comp][pname])
            if options is not None:
                cats.append(_Categorical(comp, pname, options, np.zeros(len(options))))
            elif kind.network:
                policy, wspec = policy_of(task, comp, pname)
                module = wspec.build(default[comp][pname])
                module.train()
                nets.append(_Net(comp, pname, policy, module,
                                 torch.optim.Adam(module.parameters(), lr=weights_lr)))
    return cats, nets


def _config(system: System, cats: Sequence[_Categorical], picks: Sequence[int],
            nets: Sequence[_Net]) -> SystemConfig:
    config = system.default_config()
    for cat, i in zip(cats, picks, strict=True):
        config = config.with_value(cat.component, cat.param, cat.options[i])
    for net in nets:
        config = config.with_value(net.component, net.param, snapshot(net.module))
    return config


def reinforce_search(task: Task, train: Sequence[Example], val: Sequence[Example],
                     runtime: Runtime, budget_runs: float, *, seed: int = 0,
                     components: Sequence[str] | None = None, batch_size: int = 4,
                     lr: float = 0.2, weights_lr: float = 0.05, temperature: float = 1.0,
                     max_grad_norm: float = 1.0, on_trial: OnTrial | None = None,
                     kinds: Mapping[str, ParamKind] = KINDS) -> ReinforceResult:
    """Train the joint policy on ``train`` minibatches, then score its mode on ``val``.

    Training stops when one more minibatch plus the final validation would exceed
    ``budget_runs``. The answer is the policy's most probable configuration (argmax per slot, the
    trained weights); the default configuration is scored too if budget is left, and the better
    of the two on ``val`` is returned.
    """
    if not train or not val:
        raise ConfigError("reinforce_search needs non-empty train and val sets")
    rng = random.Random(f"reinforce-search:{seed}")
    system = task.system
    account = CostAccount([c.name for c in system.components])
    cats, nets = _slots(task, components or [c.name for c in system.components if c.params],
                        weights_lr, kinds)
    result = ReinforceResult(system.default_config(), float("-inf"), [], account)
    config_base, example_base = RunningBaseline(), RunningBaseline()
    queue: list[Example] = []
    n = min(batch_size, len(train))
    with single_thread():
        while account.equivalent_runs() + n + len(val) <= budget_runs:
            if len(queue) < n:
                queue += rng.sample(list(train), len(train))  # reshuffled passes over train
            batch, queue = queue[:n], queue[n:]
            picks = [cat.sample(rng) for cat in cats]
            config = _config(system, cats, picks, nets)
            sampling = {net.component: Sampling(temperature, len(result.curve)) for net in nets}
            traces = [task.score(system.run(e.id, e.inputs, config, runtime, sampling=sampling),
                                 e) for e in batch]
            account.add_traces("baseline_search", traces)
            rewards = [t.reward or 0.0 for t in traces]
            result.curve.append(float(np.mean(rewards)))
            if on_trial is not None:
                on_trial(f"update {len(result.curve)}", result.curve[-1],
                         account.equivalent_runs())
            advantage = float(config_base.advantages([result.curve[-1]])[0])
            for cat, i in zip(cats, picks, strict=True):
                cat.update(i, advantage, lr)
            if nets:
                _weights_step(nets, traces, example_base.advantages(rewards), temperature,
                              max_grad_norm)
    result.probs = {f"{c.component}.{c.param}": [float(p) for p in c.probs()] for c in cats}
    mode = _config(system, cats, [int(np.argmax(c.logits)) for c in cats], nets)
    for config in (mode, system.default_config()):
        if account.equivalent_runs() + len(val) > budget_runs or \
                any(d == config.digest for d, _ in result.tried):
            continue
        _trial(task, config, val, runtime, account, result, on_trial)
    return result


def _weights_step(nets: Sequence[_Net], traces: Sequence[Any], advantages: np.ndarray,
                  temperature: float, max_grad_norm: float) -> None:
    """One on-policy step per Weights slot on what its component drew in this minibatch."""
    for net in nets:
        items, adv = [], []
        for trace, a in zip(traces, advantages, strict=True):
            step = trace.step(net.component)
            if not step.skipped:
                items.append((step.inputs, step.outputs))
                adv.append(float(a))
        if items and any(adv):
            policy_step(net.policy, net.module, net.optimizer, items, adv,
                        temperature=temperature, max_grad_norm=max_grad_norm)
