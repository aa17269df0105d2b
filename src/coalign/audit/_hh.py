"""Read Anthropic HH-RLHF prompt/chosen/rejected rows as audit pairs, inventing nothing.

The HH files record which final assistant turn was preferred, but not who judged it, how many
raters there were, where each text was shown, or any log-probabilities. The converter therefore
gives every pair empty rater labels, ``chosen_position="unknown"`` and no log-probs: the audit
must report the missing support (and no DPO loss) instead of treating "chosen" as a vote.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

from coalign.audit._contract import AuditScope
from coalign.audit._errors import AuditError
from coalign.audit._jsonl import iter_rows
from coalign.audit._pair import PreferencePair


def hh_pair(row: object, scope: AuditScope, where: str = "hh row") -> PreferencePair:
    """One HH row (``source_line``, ``prompt``, ``chosen``, ``rejected``) as an audit pair.

    The pair id is the row's source line; the prompt id is a hash of the exact prompt text,
    because HH has no prompt ids (so repeated prompts share an id and are flagged).
    """
    if not isinstance(row, dict):
        raise AuditError(f"{where}: must be a JSON object")
    missing = [k for k in ("source_line", "prompt", "chosen", "rejected") if k not in row]
    if missing:
        raise AuditError(f"{where}: missing field(s) {', '.join(missing)} (HH pair format)")
    prompt = row["prompt"]
    if type(prompt) is not str:
        raise AuditError(f"{where}: prompt must be a string")
    digest = hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return PreferencePair(scope=scope, pair_id=f"hh-line-{row['source_line']}",
                          prompt_id=f"hh-prompt-{digest}", prompt=prompt, chosen=row["chosen"],
                          rejected=row["rejected"], chosen_position="unknown", rater_labels=())


def iter_hh_pairs(path: Path, scope: AuditScope) -> Iterator[tuple[int, PreferencePair]]:
    """``(line_number, pair)`` for each row of an HH prompt/chosen/rejected JSONL file."""
    for number, row in iter_rows(path):
        try:
            yield number, hh_pair(row, scope, f"{path}:{number}")
        except AuditError as exc:
            message = str(exc)
            prefix = f"{path}:{number}"
            raise AuditError(message if message.startswith(prefix) else f"{prefix}: {message}") \
                from None
