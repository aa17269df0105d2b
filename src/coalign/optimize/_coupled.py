"""Coupled params: a switched choice offered with and without the values tuned for the old one.

Coordinate ascent changes one param at a time, but a component's params are not independent: a
prompt (instruction and demonstrations) accepted for one model is tuned to that model's outputs.
Seen on PubMedQA: demos bootstrapped from SmolLM2's answers were accepted, and "always Qwen" was
then validated with them (val 0.50 -> 0.42) and rejected, while Qwen with its starting prompt was
what random search found. So a proposed switch of a choice comes in two variants: as proposed,
and with the component's other tuned params back at their starting values. The local reward
ranks the variants on the search sample; the gate validates the best one not yet rejected, so a
rejected variant leaves the other for a later step (the loop's rejection memory keys each
variant by the params it resets: ``_outcome.Tried``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from coalign.config import SystemConfig
from coalign.pairs import canonical_json, to_jsonable


@dataclass(frozen=True)
class Variant:
    config: SystemConfig
    reset: tuple[str, ...] = ()  # sibling params back at their starting values


def tuned_siblings(config: SystemConfig, start: SystemConfig, component: str,
                   param: str) -> tuple[str, ...]:
    """The component's params other than ``param`` that no longer hold their starting value."""
    def same(name: str) -> bool:
        return (canonical_json(to_jsonable(config[component][name]))
                == canonical_json(to_jsonable(start[component][name])))

    return tuple(sorted(n for n in config[component] if n != param and not same(n)))


def at_start(config: SystemConfig, start: SystemConfig, component: str,
             names: Sequence[str]) -> SystemConfig:
    """``config`` with the component's params ``names`` back at their starting values."""
    for name in names:
        config = config.with_value(component, name, start[component][name])
    return config


def variants(proposed: SystemConfig, start: SystemConfig, component: str,
             siblings: Sequence[str]) -> list[Variant]:
    """The proposal as is, then (when siblings were tuned) with them at their starting values."""
    out = [Variant(proposed)]
    if siblings:
        out.append(Variant(at_start(proposed, start, component, siblings), tuple(siblings)))
    return out


def best_variant(options: Sequence[Variant], score: Callable[[Variant], float]
                 ) -> tuple[Variant, list[tuple[Variant, float]]]:
    """The variant with the highest local reward (a tie keeps the earlier: the tuned values),
    and every variant's score. A single variant is returned unscored."""
    if len(options) == 1:
        return options[0], []
    scored = [(v, score(v)) for v in options]
    best = max(range(len(scored)), key=lambda i: (scored[i][1], -i))
    return scored[best][0], scored
