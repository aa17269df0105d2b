"""The trained variants compared by the benchmark: ARCO, its ablations and the K sweep."""

from __future__ import annotations

from dataclasses import dataclass

from coalign.rubric._rubric import RubricSpec

__all__ = ["Variant", "variants"]


@dataclass(frozen=True)
class Variant:
    """A named training recipe: which rubric model, which reward drives the policy."""

    name: str
    spec: RubricSpec
    reward: str = "arco"  # arco | outcome


def variants(ablations: bool = True, k_sweep: bool = True) -> dict[str, Variant]:
    """A fresh name -> variant map. ``arco`` (K=3) and ``outcome_reinforce`` always come first.

    ``arco_no_rubric`` is also the scalar process reward (no criteria text) whose credit
    assignment the benchmark compares with ARCO.
    """
    out = [Variant("arco", RubricSpec(k=3)), Variant("outcome_reinforce", RubricSpec(k=3),
                                                     reward="outcome")]
    if ablations:
        out += [
            Variant("arco_no_rubric", RubricSpec(k=1, mode="none")),
            Variant("arco_fixed_criteria", RubricSpec(k=3, mode="fixed")),
            Variant("arco_no_prefix", RubricSpec(k=3, use_prefix=False)),
        ]
    if k_sweep:
        out += [Variant("arco_k1", RubricSpec(k=1)), Variant("arco_k5", RubricSpec(k=5))]
    return {v.name: v for v in out}
