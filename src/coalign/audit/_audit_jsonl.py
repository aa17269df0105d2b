"""Audit a JSONL file: validated in bulk block by block, record by record where needed.

Most blocks of a well-formed file pass ``BlockDecoder`` and are counted per column, several
times faster than building a ``PreferencePair`` per row. A block holding anything unusual is
re-read record by record, so errors and their wording are those of the per-record path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from coalign.audit._audit import PreferenceAuditor
from coalign.audit._blocks import BlockDecoder
from coalign.audit._contract import AuditScope, PreferenceContract
from coalign.audit._jsonl import (
    BLOCK_BYTES,
    iter_line_blocks,
    iter_pairs_jsonl,
    pairs_from_rows,
    parse_lines,
)
from coalign.audit._pair import PreferencePair
from coalign.audit._report import PreferenceReport

PairReader = Callable[[Path, AuditScope], Iterator[tuple[int, PreferencePair]]]


def audit_jsonl(contract: PreferenceContract, path: str | Path,
                reader: PairReader | None = None) -> PreferenceReport:
    """Stream-audit a JSONL file in bounded memory (no size cap).

    Args:
        contract: the declared contract; every row's scope must equal its scope.
        path: the pairs file.
        reader: yields ``(line_number, pair)``; defaults to ``iter_pairs_jsonl`` (the audit
            format); ``iter_hh_pairs`` reads HH-RLHF prompt/chosen/rejected rows.
    """
    path = Path(path)
    with PreferenceAuditor(contract) as auditor:
        if reader is None or reader is iter_pairs_jsonl:
            _audit_blocks(auditor, path)
        else:
            for line, pair in reader(path, auditor.contract.scope):
                auditor._accept(pair, line)
        return auditor.finish()


def _audit_blocks(auditor: PreferenceAuditor, path: Path, block_bytes: int = BLOCK_BYTES) -> None:
    """The audit format in blocks: bulk-validated where possible, else record by record."""
    scope = auditor.contract.scope
    decoder = BlockDecoder(scope, auditor._want_logprobs)
    for first, lines in iter_line_blocks(path, block_bytes):
        block = decoder.decode(lines, first)
        if block is not None:
            auditor._accept_block(block)
            continue
        # Something in this block is unusual: the per-record path finds it and words the error.
        for line, pair in pairs_from_rows(path, scope, parse_lines(path, first, lines)):
            auditor._accept(pair, line)
