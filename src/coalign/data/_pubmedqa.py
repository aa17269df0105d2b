"""PubMedQA PQA-L (expert-labelled yes/no/maybe) from the shared data folder."""

from __future__ import annotations

from pathlib import Path

from coalign.data._base import Example
from coalign.data._io import Fields, check_limit, read_json, resolve_file
from coalign.errors import DataError

__all__ = ["PUBMEDQA_LABELS", "load_pubmedqa", "pubmedqa_split"]

PUBMEDQA_FILE = "pubmedqa/pqal_train500.json"
SPLIT_FILE = "pubmedqa/optimas_split_pmids.json"
PUBMEDQA_LABELS = ("yes", "no", "maybe")


def load_pubmedqa(path: Path | str | None = None, limit: int | None = None, *,
                  ground_truth: Path | str | None = None) -> list[Example]:
    """Load PubMedQA items (a JSON object keyed by PMID, the ``ori_pqal.json`` schema).

    Args:
        path: the JSON file; default: the shared ``pqal_train500.json`` (the official
            train half of PQA-L; the test half is held out).
        limit: keep at most this many items (in file order).
        ground_truth: a ``{PMID: label}`` file such as the official
            ``test_ground_truth.json``: only its PMIDs are loaded (in ``path``'s order), each
            labelled by it (an item's own ``final_decision`` may then be absent). Every one of
            its PMIDs must be in ``path``: a partial match means the files do not belong
            together.

    Returns:
        Examples with ``id`` = PMID, ``inputs = {"question", "contexts": [str, ...]}``,
        ``target`` = ``final_decision`` or the ground-truth label (``"yes"``, ``"no"`` or
        ``"maybe"``) and ``meta`` holding
        ``pmid``, ``long_answer``, ``labels`` (section names of the contexts), ``meshes`` and
        ``year``.

    Raises:
        DataError: the file is missing or an item is malformed (message names PMID and field).
    """
    check_limit(limit)
    file = resolve_file(path, PUBMEDQA_FILE)
    data = read_json(file)
    if not isinstance(data, dict):
        raise DataError(f"{file.name}: expected a JSON object keyed by PMID")
    labels = _ground_truth(Path(ground_truth).expanduser(), data, file) if ground_truth else None
    examples = []
    for pmid, item in data.items():
        if limit is not None and len(examples) >= limit:
            break
        if labels is not None and pmid not in labels:
            continue
        row = Fields(f"{file.name} PMID {pmid}", item)
        if labels is not None:
            label = labels[pmid]
        elif isinstance(item, dict) and "final_decision" not in item:
            raise row.fail("final_decision", "missing; an unlabelled test file needs its "
                                             "ground-truth file (data: {path, ground_truth})")
        else:
            label = row.text("final_decision")
        if label not in PUBMEDQA_LABELS:
            raise row.fail("final_decision", f"must be one of {'/'.join(PUBMEDQA_LABELS)} "
                                             f"(got {label!r})")
        examples.append(
            Example(
                id=str(pmid),
                inputs={
                    "question": row.text("QUESTION"),
                    "contexts": row.strings("CONTEXTS", nonempty=True),
                },
                target=label,
                meta={
                    "pmid": str(pmid),
                    "long_answer": row.get("LONG_ANSWER", str, optional=True) or "",
                    "labels": row.strings("LABELS", optional=True),
                    "meshes": row.strings("MESHES", optional=True),
                    "year": row.get("YEAR", str, optional=True),
                },
            )
        )
    return examples


def _ground_truth(file: Path, data: dict, items: Path) -> dict[str, str]:
    """``{PMID: label}`` of a ground-truth file, every PMID present in ``items``."""
    if not file.is_file():
        raise DataError(f"{file}: ground-truth file not found")
    labels = read_json(file)
    if not isinstance(labels, dict):
        raise DataError(f"{file.name}: expected a JSON object of PMID -> yes/no/maybe")
    for pmid, label in labels.items():
        if label not in PUBMEDQA_LABELS:
            raise DataError(f"{file.name} PMID {pmid}: label must be one of "
                            f"{'/'.join(PUBMEDQA_LABELS)} (got {label!r})")
        if pmid not in data:
            raise DataError(f"{file.name} PMID {pmid}: not in {items.name}; pass the PubMedQA "
                            "file these labels belong to")
    return labels


def pubmedqa_split(
    path: Path | str | None = None, split_path: Path | str | None = None
) -> dict[str, list[Example]]:
    """PubMedQA examples grouped by the Optimas train/test PMID split, in Optimas order.

    The split file lists 500 train and 500 test PMIDs. The shared PubMedQA file holds only
    the train half (it equals Optimas' train list, in the same order); the test half is
    held out. A split none of whose PMIDs are in the loaded file is left out of the result
    rather than returned empty, so ``["test"]`` fails loudly instead of evaluating nothing;
    a split only partly present is an error.

    Raises:
        DataError: a file is missing or malformed, or a split is only partly available.
    """
    by_pmid = {ex.id: ex for ex in load_pubmedqa(path)}
    file = resolve_file(split_path, SPLIT_FILE)
    splits = read_json(file)
    if not isinstance(splits, dict):
        raise DataError(f"{file.name}: expected an object mapping split name to PMID list")
    out: dict[str, list[Example]] = {}
    for name in splits:
        pmids = [str(p) for p in Fields(file.name, splits).strings(name)]
        found = [by_pmid[p] for p in pmids if p in by_pmid]
        if found and len(found) < len(pmids):
            missing = next(p for p in pmids if p not in by_pmid)
            raise DataError(
                f"{file.name}: split '{name}' has {len(pmids) - len(found)} PMIDs absent from "
                f"the PubMedQA file (first: {missing}); pass the matching PubMedQA file as path"
            )
        if found:
            out[name] = found
    return out
