"""The prompt builder: structured prompt sections, edit directives, and compilation.

A prompt is a :class:`PromptSpec` with five sections, always compiled in the fixed order
Objective -> Categories -> Decision Logic -> Examples -> Output Format (empty sections are left
out). A mutation never edits prompt text directly: it emits :class:`EditDirective` s, and
:func:`apply_directives` turns the parent spec(s) plus directives into the child spec.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from coalign.errors import ConfigError

BlockType = Literal["rule", "example", "output_schema", "vocabulary", "contrast_pair"]
BLOCK_TYPES: tuple[str, ...] = ("rule", "example", "output_schema", "vocabulary", "contrast_pair")

MAX_RULES = 6  # keep prompts bounded: the oldest rule goes first
MAX_EXAMPLES = 4


@dataclass(frozen=True)
class Demo:
    """A worked example shown in the prompt."""

    id: str
    text: str
    label: str


@dataclass(frozen=True)
class PromptSpec:
    objective: str
    categories: tuple[str, ...] = ()
    decision_logic: tuple[str, ...] = ()
    examples: tuple[Demo, ...] = ()
    output_format: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PromptSpec:
        return cls(
            objective=d["objective"],
            categories=tuple(d.get("categories", ())),
            decision_logic=tuple(d.get("decision_logic", ())),
            examples=tuple(Demo(**e) for e in d.get("examples", ())),
            output_format=d.get("output_format", ""),
        )

    @property
    def example_ids(self) -> list[str]:
        return [e.id for e in self.examples]


@dataclass(frozen=True)
class EditDirective:
    """One edit: ``text`` is the rule / definition / output instruction; ``example_ids`` name the
    demos to insert for ``example`` and ``contrast_pair``."""

    block_type: BlockType
    text: str = ""
    example_ids: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.block_type not in BLOCK_TYPES:
            raise ConfigError(f"EditDirective.block_type: unknown {self.block_type!r}")


def compile_prompt(spec: PromptSpec) -> str:
    """Render the sections in the fixed order."""
    parts = [f"## Objective\n{spec.objective.strip()}"]
    if spec.categories:
        parts.append("## Categories\n" + "\n".join(f"- {c}" for c in spec.categories))
    if spec.decision_logic:
        rules = "\n".join(f"{i}. {r}" for i, r in enumerate(spec.decision_logic, 1))
        parts.append("## Decision Logic\n" + rules)
    if spec.examples:
        demos = "\n\n".join(f"{d.text}\nAnswer: {d.label}" for d in spec.examples)
        parts.append("## Examples\n" + demos)
    if spec.output_format:
        parts.append("## Output Format\n" + spec.output_format.strip())
    return "\n\n".join(parts)


def _append(items: Sequence, new: Sequence, limit: int, key: Callable = lambda x: x) -> tuple:
    seen = {key(x) for x in items}
    out = list(items)
    for x in new:
        if key(x) not in seen:
            out.append(x)
            seen.add(key(x))
    return tuple(out[-limit:])


def apply_directives(
    parent: PromptSpec,
    directives: Sequence[EditDirective],
    lookup_demo: Callable[[str], Demo],
    mode: str = "targeted",
    secondary: PromptSpec | None = None,
) -> PromptSpec:
    """Build a child spec.

    ``targeted`` keeps the parent's rules and examples and adds to them (a faithful edit);
    ``exploratory`` keeps only the objective, categories and output format and rebuilds decision
    logic and examples from the directives (a structural rewrite with a different example set).
    A ``secondary`` parent (a merge) contributes its rules and examples first.
    """
    spec = parent
    if mode == "exploratory":
        spec = replace(spec, decision_logic=(), examples=())
    if secondary is not None:
        spec = replace(
            spec,
            decision_logic=_append(spec.decision_logic, secondary.decision_logic, MAX_RULES),
            examples=_append(spec.examples, secondary.examples, MAX_EXAMPLES, key=lambda d: d.id),
        )
    for d in directives:
        text = " ".join(d.text.split())
        if d.block_type == "rule" and text:
            spec = replace(spec, decision_logic=_append(spec.decision_logic, [text], MAX_RULES))
        elif d.block_type == "vocabulary" and text:
            spec = replace(spec, categories=_append(spec.categories, [text], 2 * MAX_RULES))
        elif d.block_type == "output_schema" and text:
            spec = replace(spec, output_format=text)
        elif d.block_type in ("example", "contrast_pair"):
            demos = [lookup_demo(i) for i in d.example_ids]
            spec = replace(
                spec, examples=_append(spec.examples, demos, MAX_EXAMPLES, key=lambda x: x.id)
            )
            if d.block_type == "contrast_pair" and text:
                spec = replace(spec, decision_logic=_append(spec.decision_logic, [text], MAX_RULES))
    return spec
