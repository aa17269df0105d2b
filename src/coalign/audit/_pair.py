"""One audited comparison: exact texts, presentation position, rater labels, log-probabilities.

``chosen``/``rejected`` name content; ``chosen_position`` records where the chosen text was
*shown* (left or right). Rater labels are positions too ("left", "right"), plus "tie" (neither
preferred under the rubric) and "abstain" (no judgment). Keeping the two vocabularies apart is
what lets the audit notice a label that contradicts its own votes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from coalign.audit._contract import AuditScope
from coalign.audit._digest import record_digest
from coalign.audit._errors import AuditError
from coalign.audit._numbers import (
    MAX_ABS_LOGPROB,
    MIN_NORMAL,
    check_identifier,
    check_logprob,
    check_text,
)

Position = Literal["left", "right", "unknown"]
Vote = Literal["left", "right", "tie", "abstain"]
POSITIONS = ("left", "right", "unknown")
VOTES = ("left", "right", "tie", "abstain")
LOGPROB_FIELDS = ("policy_chosen_logp", "policy_rejected_logp",
                  "reference_chosen_logp", "reference_rejected_logp")
_TEXT_FIELDS = ("pair_id", "prompt_id", "prompt", "chosen", "rejected", "chosen_position")
JSON_FIELDS = ("scope", *_TEXT_FIELDS, "rater_labels", *LOGPROB_FIELDS, "digest")
_JSON_FIELD_SET = frozenset(JSON_FIELDS)


@dataclass(frozen=True, slots=True)
class PreferencePair:
    """A frozen, digested comparison record (audit format, distinct from ``coalign.pairs``).

    ``rater_labels`` is a sequence of ``(rater_id, vote)`` (or a mapping); it is copied into a
    tuple at construction, and duplicates are kept so the audit can see them. The four
    log-probabilities are all supplied or all ``None``. Pass ``digest`` to verify a stored
    digest; leave it empty to compute one. The digest covers every other field.

    Raises:
        AuditError: naming the field, for any malformed or inconsistent value.
    """

    scope: AuditScope
    pair_id: str
    prompt_id: str
    prompt: str
    chosen: str
    rejected: str
    chosen_position: Position
    rater_labels: tuple[tuple[str, Vote], ...]
    policy_chosen_logp: float | None = None
    policy_rejected_logp: float | None = None
    reference_chosen_logp: float | None = None
    reference_rejected_logp: float | None = None
    digest: str = ""

    def __post_init__(self) -> None:
        # Hot path of streaming audits: cheap exact-type checks first; the detailed checks in
        # ``_numbers`` run only to explain a failure, so messages stay precise without cost.
        if type(self.scope) is not AuditScope:
            raise AuditError(f"{self._where()}: scope must be an AuditScope")
        for name in ("pair_id", "prompt_id"):
            value = getattr(self, name)
            if not (type(value) is str and value and value == value.strip()
                    and value.isprintable()):
                check_identifier(value, f"{self._where()}: {name}")
        prompt, chosen, rejected = self.prompt, self.chosen, self.rejected
        if not (type(prompt) is str and prompt and not prompt.isspace()):
            check_text(prompt, f"{self._where()}: prompt")
        if not (type(chosen) is str and chosen and type(rejected) is str and rejected):
            check_text(chosen, f"{self._where()}: chosen", blank_ok=True)
            check_text(rejected, f"{self._where()}: rejected", blank_ok=True)
        if chosen == rejected:
            raise AuditError(f"{self._where()}: chosen and rejected texts are identical; "
                             "not a comparison")
        position = self.chosen_position
        if type(position) is not str or position not in POSITIONS:
            raise AuditError(f"{self._where()}: chosen_position must be one of {POSITIONS} "
                             f"(got {position!r})")
        labels = _copy_labels(self.rater_labels, self._where)
        if position == "unknown" and any(v == "left" or v == "right" for _, v in labels):
            raise AuditError(f"{self._where()}: rater_labels hold left/right votes but "
                             "chosen_position is unknown, so votes cannot be mapped to content")
        object.__setattr__(self, "rater_labels", labels)
        logps = [self.policy_chosen_logp, self.policy_rejected_logp,
                 self.reference_chosen_logp, self.reference_rejected_logp]
        if logps.count(None) not in (0, 4):
            missing = LOGPROB_FIELDS[logps.index(None)]
            raise AuditError(f"{self._where()}: {missing} is missing; "
                             "supply all four log-probs or none")
        if logps[0] is not None:
            for index, value in enumerate(logps):
                if type(value) is float and -MAX_ABS_LOGPROB <= value <= -MIN_NORMAL:
                    continue  # the common case: a normal, finite, negative float
                logps[index] = check_logprob(value, f"{self._where()}: {LOGPROB_FIELDS[index]}")
                object.__setattr__(self, LOGPROB_FIELDS[index], logps[index])
        try:
            scope_digest = self.scope.digest
        except AttributeError:
            raise AuditError(f"{self._where()}: scope was never constructed") from None
        digest = record_digest("PreferencePair", [
            scope_digest, self.pair_id, self.prompt_id, self.prompt, self.chosen, self.rejected,
            position, labels, *logps])
        if type(self.digest) is not str:
            raise AuditError(f"{self._where()}: digest must be a hex string or '' to compute it")
        if self.digest and self.digest != digest:
            raise AuditError(f"{self._where()}: stale digest {str(self.digest)[:12]}…; the "
                             f"content hashes to {digest[:12]}… — re-audit changed evidence "
                             "as a new record")
        object.__setattr__(self, "digest", digest)

    def _where(self) -> str:
        return f"pair {self.pair_id!r}" if type(self.pair_id) is str else "pair"

    @property
    def has_logprobs(self) -> bool:
        return self.policy_chosen_logp is not None

    def to_json(self) -> dict[str, Any]:
        """The JSONL row form (rater labels as ``[[rater_id, vote], ...]``)."""
        row: dict[str, Any] = {"scope": self.scope.to_json()}
        row.update((name, getattr(self, name)) for name in _TEXT_FIELDS)
        row["rater_labels"] = [list(item) for item in self.rater_labels]
        row.update((name, getattr(self, name)) for name in LOGPROB_FIELDS)
        row["digest"] = self.digest
        return row

    @classmethod
    def from_json(cls, row: object, scope: AuditScope, where: str = "pair",
                  scope_json: dict[str, str] | None = None) -> PreferencePair:
        """Build from a JSONL row whose ``scope`` must equal ``scope`` field for field.

        Rater labels must be a JSON list of ``[rater_id, vote]``: a JSON object would silently
        merge duplicate rater ids while parsing, hiding inflated support. ``scope_json`` is
        ``scope.to_json()``, passed in by callers that parse many rows.
        """
        if type(row) is not dict:
            raise AuditError(f"{where}: must be a JSON object (got {type(row).__name__})")
        if not row.keys() <= _JSON_FIELD_SET:
            unknown = ", ".join(sorted(map(str, row.keys() - _JSON_FIELD_SET)))
            raise AuditError(f"{where}: unknown field(s) {unknown}")
        row_scope = row.get("scope")
        if row_scope != (scope_json or scope.to_json()):
            if not isinstance(row_scope, dict):
                raise AuditError(f"{where}: scope must be a JSON object of the contract revisions")
            scope = AuditScope.from_json(row_scope, f"{where}: scope")  # the audit names the diff
        labels = row.get("rater_labels")
        if type(labels) is not list:
            raise AuditError(f"{where}: rater_labels must be a list of [rater_id, vote] "
                             f"(got {type(labels).__name__})")
        try:
            return cls(scope, row["pair_id"], row["prompt_id"], row["prompt"], row["chosen"],
                       row["rejected"], row["chosen_position"], labels,
                       row.get("policy_chosen_logp"), row.get("policy_rejected_logp"),
                       row.get("reference_chosen_logp"), row.get("reference_rejected_logp"),
                       row.get("digest", ""))
        except KeyError as exc:
            raise AuditError(f"{where}: missing field {exc.args[0]}") from None


def _copy_labels(labels: object, where: Callable[[], str]) -> tuple[tuple[str, Vote], ...]:
    if isinstance(labels, Mapping):
        labels = list(labels.items())
    elif isinstance(labels, (str, bytes)) or not isinstance(labels, Iterable):
        raise AuditError(f"{where()}: rater_labels must be a sequence of (rater_id, vote)")
    copied = []
    append = copied.append
    for item in labels:
        if type(item) is list or type(item) is tuple:
            if len(item) == 2:
                rater, vote = item
                if (type(rater) is str and rater and rater == rater.strip()
                        and rater.isprintable() and type(vote) is str and vote in VOTES):
                    append((rater, vote))
                    continue
        _explain_label(item, where)
    return tuple(copied)


def _explain_label(item: object, where: Callable[[], str]) -> None:
    if type(item) not in (tuple, list) or len(item) != 2:  # type: ignore[arg-type]
        raise AuditError(f"{where()}: rater_labels entry {item!r} is not (rater_id, vote)")
    rater, vote = item  # type: ignore[misc]
    check_identifier(rater, f"{where()}: rater_labels rater id")
    raise AuditError(f"{where()}: rater {rater!r} vote must be one of {VOTES} (got {vote!r})")
