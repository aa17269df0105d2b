"""The audit: revalidate records, count support, find bias indicators, average the DPO loss.

``PreferenceAuditor`` consumes pairs one at a time (or, from ``audit_jsonl``, blocks of rows
already validated column by column) and keeps only counters plus compact fingerprints for
duplicate detection, so a stream of any length can be audited.
``audit_preferences`` is the sequence form used by the reference fixture and tests.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from coalign.audit._blocks import PairChecker, RowBlock
from coalign.audit._contract import PreferenceContract
from coalign.audit._dedup import DuplicateIndex, DuplicateSummary
from coalign.audit._digest import fingerprint
from coalign.audit._errors import AuditError
from coalign.audit._loss import dpo_losses
from coalign.audit._pair import PreferencePair
from coalign.audit._rebuild import rebuild
from coalign.audit._report import Finding, PreferenceReport, Status

if TYPE_CHECKING:
    from coalign.audit._contract import AuditScope

_EXAMPLES = 3  # ids quoted per finding; the counts carry the rest
_CHUNK = 8192  # pairs buffered before fingerprints and losses are handed on in bulk
_PAIR_CHUNK = 256  # pairs of a list checked together by PairChecker


class _Cases:
    """Pairs that share one problem: a count plus the first few pair ids."""

    def __init__(self) -> None:
        self.count = 0
        self.examples: list[str] = []

    def add(self, pair_id: str) -> None:
        self.count += 1
        if len(self.examples) < _EXAMPLES:
            self.examples.append(pair_id)

    def add_where(self, mask: np.ndarray, pair_ids: tuple[str, ...]) -> None:
        """``add`` each pair id whose ``mask`` entry is true, in order."""
        hits = np.flatnonzero(mask)
        self.count += len(hits)
        for index in hits[: _EXAMPLES - len(self.examples)]:
            self.examples.append(pair_ids[index])

    def describe(self) -> str:
        more = ", …" if self.count > len(self.examples) else ""
        return f"{self.count} pair(s), e.g. {', '.join(map(repr, self.examples))}{more}"


class PreferenceAuditor:
    """Streaming audit under one contract: ``add`` each pair, then ``finish`` once.

    Args:
        contract: revalidated on entry; a bypassed or tampered contract raises ``AuditError``.
        buffer_entries: fingerprints held in memory per duplicate index before spilling to
            a temporary folder (bounds peak memory).
    """

    def __init__(self, contract: PreferenceContract, buffer_entries: int = 1 << 16) -> None:
        self.contract = rebuild(contract, PreferenceContract, "contract")
        self._scope: AuditScope = self.contract.scope
        self._want_logprobs = self.contract.logprobs == "required"
        self._pairs = self._decisive = self._ties = self._abstentions = 0
        self._chosen_votes = self._rejected_votes = 0
        self._sides = {"left": 0, "right": 0, "unknown": 0}
        self._loss_sum = 0.0
        self._keys, self._logps = array("Q"), array("d")  # per-pair buffers, see _flush
        self._pending = 0  # pairs since the last _flush
        self._chunk_pairs = max(1, min(_CHUNK, buffer_entries))
        self._loss_max: float | None = None
        self._no_decisive, self._no_majority, self._dup_raters = _Cases(), _Cases(), _Cases()
        self._pair_ids = DuplicateIndex(buffer_entries)
        self._prompt_ids = DuplicateIndex(buffer_entries)
        self._prompt_texts = DuplicateIndex(buffer_entries)

    def close(self) -> None:
        """Remove any spilled fingerprint files (``finish`` does this too)."""
        for index in (self._pair_ids, self._prompt_ids, self._prompt_texts):
            index.close()

    def __enter__(self) -> PreferenceAuditor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()  # also after an AuditError part-way through a large stream

    def add(self, pair: PreferencePair, row: int | None = None) -> None:
        """Revalidate ``pair`` from its concrete fields and count it."""
        row = self._pairs + 1 if row is None else row
        self._accept(rebuild(pair, PreferencePair, f"pairs[{row - 1}]"), row)

    def _add_sequence(self, pairs: Sequence[PreferencePair]) -> None:
        """``add`` each pair, in chunks checked column by column (``PairChecker``).

        A chunk holding anything unusual is added pair by pair, so ``rebuild`` raises the
        same error for the same pair as ``add`` would.
        """
        checker = PairChecker(self._scope, self._want_logprobs)
        for start in range(0, len(pairs), _PAIR_CHUNK):
            chunk = pairs[start:start + _PAIR_CHUNK]
            block = checker.check(chunk, self._pairs + 1)
            if block is None:
                for pair in chunk:
                    self.add(pair)
            else:
                self._accept_block(block)

    def _accept(self, pair: PreferencePair, row: int) -> None:
        # Private on purpose: only pairs this package has just constructed from parsed rows
        # (``audit_jsonl``) may skip the rebuild; every other check still runs. Per-pair
        # numbers go into flat buffers handled per chunk.
        if pair.scope is not self._scope:
            self._check_scope(pair, row)
        if (pair.policy_chosen_logp is not None) is not self._want_logprobs:
            state = "missing" if self._want_logprobs else "supplied"
            raise AuditError(
                f"{_where(pair, row)}: log-probs are {state} but contract.logprobs is "
                f"{self.contract.logprobs!r}; fix the data or the contract")
        self._pairs += 1
        self._tally(pair)
        self._sides[pair.chosen_position] += 1
        if self._want_logprobs:
            self._logps.extend((pair.policy_chosen_logp, pair.policy_rejected_logp,
                                pair.reference_chosen_logp, pair.reference_rejected_logp))
        prompt_key, id_key = fingerprint(pair.prompt), fingerprint(pair.prompt_id)
        self._keys.extend((fingerprint(pair.pair_id), 0, row, id_key, prompt_key, row,
                           prompt_key, id_key, row))
        self._pending += 1
        if self._pending == self._chunk_pairs:
            self._flush()

    def _accept_block(self, block: RowBlock) -> None:
        # The bulk counterpart of ``_accept``: the same state, updated per column. The block's
        # source (``BlockDecoder``, ``PairChecker``) has made every check ``_accept`` makes.
        ids = block.pair_ids
        chosen, rejected, ties, abstentions = (int(c) for c in block.tallies.sum(axis=0))
        per_pair = block.tallies.T
        decisive = per_pair[0] + per_pair[1]
        self._dup_raters.add_where(block.duplicate_raters, ids)
        self._no_decisive.add_where(decisive == 0, ids)
        self._no_majority.add_where((decisive > 0) & (per_pair[0] <= per_pair[1]), ids)
        self._pairs += len(ids)
        self._count_votes(chosen, rejected, ties, abstentions)
        for side, count in zip(("left", "right", "unknown"), block.sides, strict=True):
            self._sides[side] += count
        # Fingerprints go straight to the indexes (their order there is immaterial); losses are
        # folded after every ``_chunk_pairs`` pairs, as for ``_accept``, so sums round alike.
        rows = np.arange(block.first_row, block.first_row + len(ids), dtype=np.uint64)
        pair_key, id_key, prompt_key = block.fingerprints.T
        self._pair_ids.add_many(np.column_stack((pair_key, np.zeros_like(rows), rows)))
        self._prompt_ids.add_many(np.column_stack((id_key, prompt_key, rows)))
        self._prompt_texts.add_many(np.column_stack((prompt_key, id_key, rows)))
        start = 0
        while start < len(ids):
            stop = min(len(ids), start + self._chunk_pairs - self._pending)
            if block.logps is not None:
                self._logps.frombytes(block.logps[start:stop].tobytes())
            self._pending += stop - start
            start = stop
            if self._pending == self._chunk_pairs:
                self._flush()

    def _flush(self) -> None:
        """Move buffered fingerprints to the duplicate indexes and fold buffered losses."""
        if self._keys:
            entries = np.frombuffer(self._keys, dtype=np.uint64).reshape(-1, 3, 3)
            for slot, index in enumerate((self._pair_ids, self._prompt_ids, self._prompt_texts)):
                index.add_many(entries[:, slot])
            self._keys = array("Q")
        self._pending = 0
        if self._logps:
            logps = np.frombuffer(self._logps, dtype=np.float64).reshape(-1, 4)
            losses = dpo_losses(logps[:, 0], logps[:, 1], logps[:, 2], logps[:, 3],
                                self.contract.beta)
            if not np.isfinite(losses).all():  # unreachable for validated inputs
                raise AuditError(f"pairs up to row {self._pairs}: a DPO loss is not finite")
            # fsum per chunk, and once more across chunks: the mean is exact to ~1 ulp.
            self._loss_sum = math.fsum((self._loss_sum, math.fsum(losses.tolist())))
            chunk_max = float(losses.max())
            self._loss_max = chunk_max if self._loss_max is None else max(self._loss_max,
                                                                          chunk_max)
            self._logps = array("d")

    def _check_scope(self, pair: PreferencePair, row: int) -> None:
        scope = pair.scope
        try:
            differs = self._scope.mismatch(scope)
            stale = differs is None and scope.digest != self._scope.digest
        except AttributeError:
            raise AuditError(f"{_where(pair, row)}: scope was never constructed") from None
        if stale:
            raise AuditError(f"{_where(pair, row)}: scope digest does not match its revisions")
        if differs is not None:
            raise AuditError(
                f"{_where(pair, row)}: scope.{differs} is {getattr(scope, differs)!r} but the "
                f"contract declares {getattr(self._scope, differs)!r}; audit it under its own "
                "contract")

    def _tally(self, pair: PreferencePair) -> None:
        labels = pair.rater_labels
        votes = [vote for _, vote in labels]
        ties, abstentions = votes.count("tie"), votes.count("abstain")
        chosen = votes.count(pair.chosen_position)  # "unknown" never matches a vote
        rejected = len(votes) - ties - abstentions - chosen
        if len({rater for rater, _ in labels}) != len(labels):
            self._dup_raters.add(pair.pair_id)
        if chosen + rejected == 0:
            self._no_decisive.add(pair.pair_id)
        elif chosen <= rejected:
            self._no_majority.add(pair.pair_id)
        self._count_votes(chosen, rejected, ties, abstentions)

    def _count_votes(self, chosen: int, rejected: int, ties: int, abstentions: int) -> None:
        self._decisive += chosen + rejected
        self._chosen_votes += chosen
        self._rejected_votes += rejected
        self._ties += ties
        self._abstentions += abstentions

    def finish(self) -> PreferenceReport:
        """Summarize; raises ``AuditError`` when no pair was added."""
        self._flush()
        pair_ids = self._pair_ids.summarize()
        prompt_ids = self._prompt_ids.summarize()
        prompt_texts = self._prompt_texts.summarize()
        if self._pairs == 0:
            raise AuditError("pairs: no pairs to audit; supply at least one record")
        findings = self._support_findings() + self._bias_findings()
        findings += _duplicate_findings(pair_ids, prompt_ids, prompt_texts)
        status: Status = "SUPPORTED"
        if any(f.severity == "flag" for f in findings):
            status = "FLAGGED"
        if any(f.severity == "block" for f in findings):
            status = "BLOCKED"
        has_loss = self._loss_max is not None
        return PreferenceReport(
            status=status, pairs=self._pairs, decisive=self._decisive, ties=self._ties,
            abstentions=self._abstentions, chosen_votes=self._chosen_votes,
            rejected_votes=self._rejected_votes,
            mean_dpo_loss=self._loss_sum / self._pairs if has_loss else None,
            max_dpo_loss=self._loss_max, findings=tuple(findings),
            contract_digest=self.contract.digest, beta=self.contract.beta)

    def _support_findings(self) -> list[Finding]:
        t = self.contract.thresholds
        found = []
        if self._pairs < t.min_pairs:
            found.append(Finding("insufficient_pairs", "block",
                                 f"{self._pairs} pair(s) < thresholds.min_pairs={t.min_pairs}"))
        if self._decisive < t.min_decisive_votes:
            found.append(Finding("insufficient_decisive_support", "block",
                                 f"{self._decisive} decisive vote(s) < "
                                 f"thresholds.min_decisive_votes={t.min_decisive_votes}"))
        if self._no_decisive.count:
            found.append(Finding("no_decisive_judgment", "block",
                                 "no left/right vote (only ties, abstentions or no raters): "
                                 + self._no_decisive.describe()))
        if self._no_majority.count:
            found.append(Finding("chosen_without_majority", "block",
                                 "chosen label without a chosen-vote majority: "
                                 + self._no_majority.describe()))
        if self._dup_raters.count:
            found.append(Finding("duplicate_rater", "block",
                                 "a rater id repeats within a pair, inflating support: "
                                 + self._dup_raters.describe()))
        return found

    def _bias_findings(self) -> list[Finding]:
        t = self.contract.thresholds
        found = []
        if self._decisive:
            share = self._rejected_votes / self._decisive
            if share > t.max_rejected_vote_share:
                found.append(Finding("rejection_disagreement", "flag",
                                     f"{share:.3f} of decisive votes favour the rejected text > "
                                     f"thresholds.max_rejected_vote_share="
                                     f"{t.max_rejected_vote_share}"))
        known = self._sides["left"] + self._sides["right"]
        if known:
            side = max(("left", "right"), key=self._sides.__getitem__)
            share = self._sides[side] / known
            if share > t.max_same_side_share:
                found.append(Finding("one_sided_layout", "flag",
                                     f"chosen shown on the {side} in {share:.3f} of pairs > "
                                     f"thresholds.max_same_side_share={t.max_same_side_share}"))
        if self._sides["unknown"]:
            found.append(Finding("presentation_unrecorded", "flag",
                                 f"{self._sides['unknown']} pair(s) do not record where the "
                                 "chosen text was shown; position bias cannot be checked"))
        return found


def _duplicate_findings(pair_ids: DuplicateSummary, prompt_ids: DuplicateSummary,
                        prompt_texts: DuplicateSummary) -> list[Finding]:
    found = []
    if pair_ids.groups:
        found.append(Finding("duplicate_pair_id", "block",
                             f"{pair_ids.groups} pair id(s) repeat ({pair_ids.extra_rows} extra "
                             f"row(s)), e.g. rows {_rows(pair_ids.examples)}"))
    if prompt_ids.conflicts:
        found.append(Finding("prompt_id_text_conflict", "block",
                             f"{prompt_ids.conflicts} prompt id(s) carry different prompt texts, "
                             f"e.g. rows {_rows(prompt_ids.conflict_examples)}"))
    if prompt_ids.groups:
        found.append(Finding("duplicate_prompt_id", "flag",
                             f"{prompt_ids.groups} prompt id(s) appear in several pairs "
                             f"({prompt_ids.extra_rows} extra), overweighting those prompts, "
                             f"e.g. rows {_rows(prompt_ids.examples)}"))
    if prompt_texts.conflicts:
        found.append(Finding("repeated_prompt_text", "flag",
                             f"{prompt_texts.conflicts} prompt text(s) reappear under new prompt "
                             f"ids, e.g. rows {_rows(prompt_texts.conflict_examples)}"))
    return found


def _where(pair: PreferencePair, row: int) -> str:
    return f"pair {pair.pair_id!r} (row {row})"


def _rows(examples: tuple[tuple[int, ...], ...]) -> str:
    return "; ".join(",".join(map(str, group)) for group in examples)


def audit_stream(contract: PreferenceContract, pairs: Iterable[PreferencePair]) -> PreferenceReport:
    """Audit any iterable of pairs (each revalidated) in bounded memory.

    A list or tuple is checked in chunks; any other iterable is read one pair at a time, so a
    lazy source is never read ahead of the pair being audited.
    """
    with PreferenceAuditor(contract) as auditor:
        if type(pairs) in (list, tuple):
            auditor._add_sequence(pairs)  # type: ignore[arg-type]
        else:
            for pair in pairs:
                auditor.add(pair)
        return auditor.finish()


def audit_preferences(contract: PreferenceContract,
                      pairs: tuple[PreferencePair, ...] | list[PreferencePair]) -> PreferenceReport:
    """Revalidate a contract and its pairs; report support, bias indicators and DPO loss.

    Args:
        contract: the declared scope, beta, log-prob policy and thresholds.
        pairs: a tuple or list of ``PreferencePair`` (use ``audit_stream``/``audit_jsonl`` for
            iterators and files). There is no upper size limit.

    Returns:
        A ``PreferenceReport`` whose claim is preference evidence, not reward or capability.

    Raises:
        AuditError: for any record that cannot be reconstructed from canonical fields, a
            scope mismatch, a log-prob policy violation or an empty input. No report is made.
    """
    if type(pairs) not in (tuple, list):
        raise AuditError(f"pairs: expected a tuple or list, got {type(pairs).__name__}; "
                         "use audit_stream for iterators")
    return audit_stream(contract, tuple(pairs))
