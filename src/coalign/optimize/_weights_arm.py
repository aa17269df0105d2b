"""The portfolio loop's weights arm: CMA-ES on a small ``Weights`` param, judged on validation.

The global arm searches the finite slots and the local arm moves a ``Weights`` param only by
policy gradient against the component's local reward. Where that reward is weak the weights
stay near their start while a plain evolution strategy on the validation score finds far
better ones (next_item: baselines searching the decider's six feature weights reach 0.83 on
test at 500 runs, the loop 0.40). This arm gives the loop that search: a param whose state
dict has at most ``MAX_DIM`` numbers is one vector, CMA-ES proposes the next vector, and the
candidate is validated from its component on (the upstream outputs are cached, so it costs
that component's executions only) and gated like every portfolio proposal.

No optimizer state is kept between steps: the search is replayed from the configs validated
so far. CMA-ES is deterministic given its seed and the scores told, so asking it again from the
start yields the same vectors; the first one whose config was not validated yet is the
proposal. The search belongs to the other params' values: once another param changes (an
accepted prompt), a new search starts from the weights of the first config validated there.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from coalign.component import VectorWeights
from coalign.config import SystemConfig
from coalign.optimize._outcome import Outcome, Proposal, StepState
from coalign.optimize._portfolio import Validated, arm_of
from coalign.optimize._position import Position
from coalign.optimize._step import StepEnv, judged

WEIGHTS_ARM = "*"  # a weights step's component in the ledger; its param names the slot
PREFIX = "cma:"
MAX_DIM = 64  # larger state dicts (a LoRA, an MLP) are left to the local arm
MAX_GENERATIONS = 10_000  # replay guard: far beyond any run's steps


def is_weights_step(component: str, param: str) -> bool:
    return arm_of(component, param) == "weights"


def _compact(component: Any, param: str, state: Mapping[str, Any]) -> np.ndarray | None:
    """The component's compact vector of ``state`` (``VectorWeights``), if it has one."""
    if not isinstance(component, VectorWeights):
        return None
    v = component.weights_vector(param, state)
    return None if v is None else np.asarray(v, dtype=float)


def to_vector(component: Any, param: str, state: Mapping[str, Any]) -> np.ndarray:
    """The vector the arm searches: the component's compact form if it has one for
    ``state``, else the state dict flattened."""
    v = _compact(component, param, state)
    return flatten(state) if v is None else v


def from_vector(component: Any, param: str, vector: np.ndarray, like: Mapping[str, Any]
                ) -> dict[str, Any]:
    """``to_vector``'s inverse, shaped like ``like``."""
    if _compact(component, param, like) is not None:
        return component.weights_from_vector(param, vector, like)
    return unflatten(like, vector)


def flatten(state: Mapping[str, Any]) -> np.ndarray:
    """A state dict as one float vector (tensors in name order)."""
    return np.concatenate([state[k].detach().reshape(-1).double().numpy()
                           for k in sorted(state)]) if state else np.zeros(0)


def unflatten(template: Mapping[str, Any], vector: np.ndarray) -> dict[str, Any]:
    """``vector`` back into tensors shaped and typed like ``template``'s."""
    import torch

    out, at = {}, 0
    for k in sorted(template):
        t = template[k]
        n = int(t.numel())
        out[k] = torch.as_tensor(vector[at:at + n], dtype=t.dtype).reshape(t.shape).clone()
        at += n
    return out


def weights_slots(system: Any, targets: Sequence[tuple[str, str]], config: SystemConfig,
                  policies: Mapping[tuple[str, str], str]) -> list[tuple[str, str]]:
    """The targets whose kind is ``weights`` with at most ``MAX_DIM`` numbers to search (in
    ``to_vector``'s form), not chosen per input."""
    out = []
    for c, p in targets:
        if system.component(c).params[p].kind != "weights" or (c, p) in policies:
            continue
        if 0 < len(to_vector(system.component(c), p, config[c][p])) <= MAX_DIM:
            out.append((c, p))
    return out


def _base(config: SystemConfig, slot: tuple[str, str], start: Any) -> str:
    """What names a search: the config's digest with the slot at its start value."""
    return config.with_value(*slot, start).digest


def history(validated: Sequence[Validated], config: SystemConfig, slot: tuple[str, str],
            start: Any) -> list[Validated]:
    """The validated configs that differ from ``config`` in the slot's weights at most, in
    the order they were validated."""
    base = _base(config, slot, start)
    return [v for v in validated if _base(v.config, slot, start) == base]


def population(dim: int) -> int:
    """CMA-ES's default population size in ``dim`` dimensions: one generation's steps."""
    return 4 + int(3 * np.log(dim))


def improving(system: Any, slots: Sequence[tuple[str, str]], validated: Sequence[Validated],
              config: SystemConfig) -> bool:
    """A slot's search under the current config's other params is in its first generation
    (CMA-ES learns nothing before one) or its last generation's worth of validations raised
    the search's best score: a search making progress is not interrupted."""
    defaults = system.default_config()
    for c, p in slots:
        n = population(len(to_vector(system.component(c), p, config[c][p])))
        seen = history(validated, config, (c, p), defaults[c][p])
        if len(seen) <= n:
            return True
        means = [v.mean for v in seen]
        if max(means[-n:]) > max(means[:-n]):
            return True
    return False


def next_vector(mean0: np.ndarray, scores: Mapping[str, float], key: Any, seed: int
                ) -> np.ndarray:
    """Replay CMA-ES (minimising minus the score) from ``mean0``, step size 1 or the
    largest weight's size: the first vector asked whose ``key(vector)`` is not in
    ``scores``. A search that converged restarts around the best vector so far with the
    next seed."""
    from cmaes import CMA

    sigma = max(1.0, float(np.abs(mean0).max()))
    best: tuple[float, np.ndarray] = (float("inf"), mean0)
    cma = CMA(mean=mean0.astype(float), sigma=sigma, seed=seed)
    for _ in range(MAX_GENERATIONS):
        told = []
        for _ in range(cma.population_size):
            x = cma.ask()
            k = key(x)
            if k not in scores:
                return x
            told.append((x, -scores[k]))
            best = min(best, (-scores[k], x), key=lambda b: b[0])
        cma.tell(told)
        if cma.should_stop():
            seed += 1
            cma = CMA(mean=best[1].astype(float), sigma=sigma, seed=seed)
    raise RuntimeError("weights arm: CMA-ES replay ran past its generation guard")


def propose(system: Any, slot: tuple[str, str], validated: Sequence[Validated],
            current: SystemConfig, seed: int) -> SystemConfig:
    """The weights arm's next config for ``slot``: the current one with CMA-ES's next
    weights (the search of the current config's other params, replayed)."""
    c, p = slot
    start = system.default_config()[c][p]
    component = system.component(c)
    spec = component.params[p]
    seen = history(validated, current, slot, start)
    template = current[c][p]
    origin = seen[0].config[c][p] if seen else template
    scores = {v.config.digest: v.mean for v in seen if v.rewards}

    def config_of(x: np.ndarray) -> SystemConfig:
        return current.with_value(c, p, spec.validate(from_vector(component, p, x, template)))

    base = _base(current, slot, start)
    search_seed = int(hashlib.sha256(f"{seed}:{base}".encode()).hexdigest()[:8], 16)
    x = next_vector(to_vector(component, p, origin), scores, lambda v: config_of(v).digest,
                    search_seed)
    return config_of(x)


def arm_slots(env: StepEnv, at: Position) -> list[tuple[str, str]]:
    """The weights arm's slots: the small ``Weights`` targets, less the last component's,
    which the local arm trains on the task metric (``_exact``)."""
    return [s for s in weights_slots(env.task.system, env.targets, at.config, at.policies)
            if s[0] not in env.exact]


def weights_step(t: int, env: StepEnv, at: Position) -> Outcome:
    """Step ``t`` as a weights step: CMA-ES's next weights for one small ``Weights`` slot
    (drawn when there are several), validated in full from its component on and gated."""
    slots = arm_slots(env, at)
    if not slots:
        return Outcome(WEIGHTS_ARM, PREFIX, StepState.SETTLED, at.score,
                       reason="no weights param small enough for the weights arm")
    slot = random.Random(f"{env.settings.seed}:weights:{t}").choice(sorted(slots))
    config = propose(env.task.system, slot, at.validated, at.config, env.settings.seed)
    c, p = slot
    proposal = Proposal(config[c][p], config, dict(at.policies))
    out = judged(env, at, c, p, proposal, early=False)
    return dataclasses.replace(out, component=WEIGHTS_ARM, param=f"{PREFIX}{c}.{p}")
