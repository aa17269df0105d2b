"""The default mutation operator: an LLM reviewer plus the prompt builder.

For each child slot the failure mode is the parent's confusion cell for that slot (named from the
data). The LLM sees the parent prompt, the cell and the questions of a few of its dev examples, and
writes a hypothesis citing those ids plus one rule (optionally a label definition). The code, not
the LLM, chooses which demos to insert (from the demo pool, with the cell's labels), so every
``example`` / ``contrast_pair`` directive is data-grounded and a small local model only has to
write one sentence well. The directives are compiled by :mod:`coalign.search._prompt`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from coalign.lm import LM, chat
from coalign.search._mutation import (
    BaseMutator,
    FailureCell,
    Proposal,
    TaskBrief,
    failure_cells,
    parent_records,
    parent_spec,
)
from coalign.search._prompt import EditDirective, PromptSpec, apply_directives, compile_prompt
from coalign.search._rounds import ChildSlot
from coalign.search._state import ROOT_VERSION, SearchState

_SYSTEM = (
    "You improve the instructions of a text classifier. Reply with these lines only:\n"
    "HYPOTHESIS: <one sentence on why the mistake happens, citing example ids>\n"
    "RULE: <one imperative sentence to add to the instructions>\n"
    "DEFINITION: <optional, 'label: what it means'>"
)
_QUOTED_RE = re.compile(r"^(?:add|include|insert|use|append)\b[^\"]*\"([^\"]{10,})\"", re.I)
_FIELD_RE = re.compile(r"^\W*(FAILURE|HYPOTHESIS|RULE|DEFINITION)\W*:\s*(.+)$", re.I | re.M)
_MAX_FIELD = 300
# small models often restate the request ("Add a rule to the instructions that states that X"):
# keep only X, so the compiled prompt reads as an instruction to the task model
_META_RE = re.compile(
    r"^(?:add|include|create|insert|write)\s+(?:a\s+|one\s+)?(?:new\s+)?rule\s+"
    r"(?:to\s+the\s+instructions\s+)?(?:that\s+|which\s+)?(?:states?|says?)?\s*(?:that\s+)?",
    re.I,
)


def parse_review(text: str) -> dict[str, str]:
    """Pull the labelled fields out of a reply; unlabelled first line becomes the rule."""
    fields: dict[str, str] = {}
    for key, value in _FIELD_RE.findall(text):
        key = key.lower()
        value = value.strip().strip("\"'`").strip()
        if value and key not in fields:
            fields[key] = value[:_MAX_FIELD]
    if "rule" not in fields:
        # an unlabelled sentence may be the rule; labelled lines and echoed examples are not
        lines = [
            ln.strip()
            for ln in text.splitlines()
            if len(ln.split()) >= 4 and not _FIELD_RE.match(ln) and not ln.lstrip().startswith("[")
        ]
        if lines:
            fields["rule"] = lines[0][:_MAX_FIELD]
    if "rule" in fields:
        quoted = _QUOTED_RE.match(fields["rule"])  # 'Add the sentence "X" to the instructions'
        core = quoted.group(1) if quoted else _META_RE.sub("", fields["rule"]).strip()
        if len(core.split()) >= 3:
            fields["rule"] = core[0].upper() + core[1:]
    return fields


class LLMReviewer(BaseMutator):
    """Review Agent + Prompt Builder over an :class:`~coalign.lm.LM`.

    Args:
        lm: the reviewer model (greedy decoding, so a response cache replays it exactly).
        task: what the reviewer may know about the task.
        max_tokens: reply budget of one review.
        n_failure_examples: dev examples of the target cell shown to the reviewer.
    """

    def __init__(
        self, lm: LM, task: TaskBrief, max_tokens: int = 120, n_failure_examples: int = 2
    ) -> None:
        self.lm = lm
        self.task = task
        self.max_tokens = max_tokens
        self.n_failure_examples = n_failure_examples

    def propose(self, snapshot: SearchState, slots: Sequence[ChildSlot]) -> list[Proposal]:
        return [self._child(snapshot, i, slot) for i, slot in enumerate(slots)]

    def _child(self, snapshot: SearchState, index: int, slot: ChildSlot) -> Proposal:
        spec = parent_spec(snapshot, slot.parent)
        cold = slot.parent == ROOT_VERSION and snapshot.current_round == 1
        records = [] if cold else parent_records(snapshot, slot.parent)
        cells = failure_cells(records, self.task.labels)
        cell = cells[slot.cell_rank % len(cells)]
        mode = snapshot.mutation_mode
        reply = self.lm.generate(
            chat(
                self._request(spec, cell, len(records), mode),
                system=_SYSTEM,
                max_tokens=self.max_tokens,
            )
        ).text
        fields = parse_review(reply)
        # cold-start seeds span cost regions (rule only / +1 demo / +contrast pair); later
        # siblings of one parent escalate the same way, so they differ in kind, not only text
        tier = index % 3 if cold else slot.cell_rank % 3
        if mode == "exploratory":
            tier = 2
        elif fields.get("rule") in (None, *spec.decision_logic):
            tier = max(tier, 1)  # no new rule: still make a data-grounded edit (a demo)
        directives = self._directives(fields, cell, spec, tier)
        secondary = parent_spec(snapshot, slot.secondary_parent) if slot.secondary_parent else None
        child = apply_directives(spec, directives, self.task.lookup_demo, mode, secondary)
        rationale = {
            "cell": cell.name,
            "failure": fields.get("failure") or cell.name,
            "hypothesis": fields.get("hypothesis", ""),
            "directives": [d.block_type for d in directives],
            "mode": mode,
            "parsed": "rule" in fields,
            "reply": reply[:1000],
        }
        return Proposal(slot.parent, child, compile_prompt(child), slot.secondary_parent, rationale)

    def _request(self, spec: PromptSpec, cell: FailureCell, n_records: int, mode: str) -> str:
        head = f"Task: {self.task.description}\n\nCurrent instructions:\n{compile_prompt(spec)}\n\n"
        if cell.pred is None:
            body = (
                "No evaluation results yet. Write a rule that helps recognise when the correct "
                f"answer is '{cell.gold}'."
            )
        else:
            shown = cell.example_ids[: self.n_failure_examples]
            quoted = "; ".join(f"[{i}] {self.task.example_question(i)}" for i in shown)
            body = (
                f"Mistake: {cell.name} - the correct answer was '{cell.gold}' but the classifier "
                f"said '{cell.pred}' on {len(cell.example_ids)} of {n_records} dev questions, "
                f"e.g. {quoted}"
            )
        how = (
            "Make a small, faithful fix."
            if mode == "targeted"
            else "Propose a different decision strategy."
        )
        return f"{head}{body}\n\n{how} Reply with the HYPOTHESIS and RULE lines now."

    def _directives(
        self, fields: dict[str, str], cell: FailureCell, spec: PromptSpec, tier: int
    ) -> list[EditDirective]:
        out: list[EditDirective] = []
        if fields.get("rule"):
            out.append(EditDirective("rule", fields["rule"]))
        definition = fields.get("definition", "")
        if ":" in definition and definition.split(":")[0].strip().lower() in self.task.labels:
            out.append(EditDirective("vocabulary", definition))
        if tier == 1:
            gold = self.task.demos(cell.gold, 1, exclude=spec.example_ids)
            out.append(EditDirective("example", "", tuple(d.id for d in gold)))
        elif tier == 2:
            # a contrast pair: one demo of the right label, one of the label it was confused with
            other = cell.pred or next(lb for lb in self.task.labels if lb != cell.gold)
            gold = self.task.demos(cell.gold, 1, exclude=spec.example_ids)
            pair = gold + self.task.demos(other, 1, exclude=spec.example_ids)
            out.append(EditDirective("contrast_pair", "", tuple(d.id for d in pair)))
        return out
