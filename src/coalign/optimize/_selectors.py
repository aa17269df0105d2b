"""Per-instance selectors frozen as they were validated.

An LRF selector picks each input's option by the local reward. Stage 2 keeps adapting the live
reward after every accepted step, so a selector reading it would drift away from the config the
gate validated, and a step's test score recomputed later would use another selector. The loop
therefore freezes a copy of the reward's heads when it proposes a selector; the copy's digest
names it in trace keys and in the ledger (``selectors``), and an accepted one is saved under
``lrf/selector-<digest>`` before its ledger row, so resume, ``Job.steps_on_test`` and
``coalign export`` run the very selector the gate saw.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from coalign.errors import StoreError
from coalign.files import replacing_dir
from coalign.optimize._choice import RewardSelector
from coalign.pairs import canonical_json
from coalign.rewards import Backbone, LocalRewardModel, load_reward_model, save_reward_model
from coalign.runtime import Runtime, selector_tag

# a per-instance (component, param) -> digest of the frozen reward its selector reads
Policies = Mapping[tuple[str, str], str]


def reward_digest(model: LocalRewardModel) -> str:
    """sha256 of everything a reward model scores with: backbone id, feature width, and every
    head's description and tensors (a saved and reloaded model has the same digest)."""
    h = hashlib.sha256(canonical_json({
        "backbone": model.backbone.id, "n_features": model.n_features,
        "heads": {n: model.descriptions.get(n, n) for n in sorted(model.heads)}}).encode())
    for name in sorted(model.heads):
        for key, tensor in sorted(model.heads[name].state_dict().items()):
            h.update(f"{name}.{key}:{tuple(tensor.shape)}".encode())
            h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def freeze(model: LocalRewardModel) -> LocalRewardModel:
    """A scoring-only copy of ``model``'s heads on the same (frozen) backbone."""
    frozen = model.untrained()
    frozen.heads = {n: copy.deepcopy(head).eval() for n, head in model.heads.items()}
    return frozen


def selector_dir(digest: str) -> str:
    """Where a run dir keeps the frozen reward of an accepted selector (relative)."""
    return f"lrf/selector-{digest[:16]}"


def save_frozen(model: LocalRewardModel, folder: Path) -> None:
    """Write ``model`` to ``folder`` whole or not at all (a temp folder renamed); an existing
    folder is kept: it is named by the same digest."""
    if folder.is_dir():
        return
    folder.parent.mkdir(parents=True, exist_ok=True)
    with replacing_dir(folder) as tmp:
        save_reward_model(model, tmp)


def load_frozen(folder: Path, backbone: Backbone, digest: str) -> LocalRewardModel:
    """The frozen reward in ``folder``, checked against ``digest``."""
    model = load_reward_model(folder, backbone)
    if reward_digest(model) != digest:
        raise StoreError(f"selector reward model {folder} does not match its digest "
                         f"{digest[:16]}; it was altered (export or run again)")
    return model


class FrozenRewards:
    """The frozen rewards of a run by digest: kept in memory once made or loaded."""

    def __init__(self, run_dir: Path, backbone: Backbone) -> None:
        self.run_dir, self.backbone = run_dir, backbone
        self._models: dict[str, LocalRewardModel] = {}

    def freeze(self, model: LocalRewardModel) -> str:
        """Freeze ``model`` as it is now; returns its digest."""
        digest = reward_digest(model)
        if digest not in self._models:
            self._models[digest] = freeze(model)
        return digest

    def get(self, digest: str) -> LocalRewardModel:
        if digest not in self._models:
            self._models[digest] = load_frozen(self.run_dir / selector_dir(digest),
                                               self.backbone, digest)
        return self._models[digest]

    def save(self, digest: str) -> None:
        save_frozen(self.get(digest), self.run_dir / selector_dir(digest))

    def runtime(self, runtime: Runtime, policies: Policies,
                costs: Mapping[tuple[str, str], Mapping[Any, float]],
                cost_weight: float) -> Runtime:
        """``runtime`` with an LRF selector, reading its frozen reward, on each slot of
        ``policies`` (a slot's option ``costs`` traded at ``cost_weight``)."""
        selectors = dict(runtime.selectors)
        selectors.update({key: RewardSelector(self.get(digest), costs.get(key), cost_weight)
                          for key, digest in policies.items()})
        return dataclasses.replace(runtime, selectors=selectors)


def policy_suffix(policies: Policies) -> str:
    """What tells stored traces of one config apart by the selectors in place."""
    return selector_tag(policies)


def selectors_json(policies: Policies) -> dict[str, str]:
    return {f"{c}.{p}": d for (c, p), d in sorted(policies.items())}


def policies_of(rec: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """A ledger row's selectors: its ``policies`` with the digest each one was validated with.
    A row from before selectors were frozen has none: refused, its selectors cannot be rebuilt."""
    digests = rec.get("selectors") or {}
    out = {}
    for c, p in rec["policies"]:
        digest = digests.get(f"{c}.{p}")
        if not isinstance(digest, str):
            raise StoreError(f"ledger step has selector {c}.{p} without the digest of its frozen "
                             "reward (made by an older coalign); use a new --run-dir")
        out[(c, p)] = digest
    return out
