"""Datasets (QA and code files, a generated world), answer metrics and the Example record."""

from coalign.data._amazon import AMAZON_SPLITS, load_amazon_sessions
from coalign.data._base import DataError, Example, split
from coalign.data._code import MBPP_SPLITS, load_humaneval, load_mbpp
from coalign.data._files import DataFile, detect_format, load_file, load_jsonl_examples
from coalign.data._hotpotqa import load_hotpotqa
from coalign.data._io import DATA_DIR_ENV, data_dir
from coalign.data._metrics import (
    Metric,
    accuracy,
    exact_match,
    extract_label,
    f1_score,
    get_metric,
    metric_names,
    normalize_answer,
)
from coalign.data._musique import load_musique
from coalign.data._pubmedqa import PUBMEDQA_LABELS, load_pubmedqa, pubmedqa_split
from coalign.data._world import Entity, World, build_world, make_world

__all__ = [
    "AMAZON_SPLITS",
    "DATA_DIR_ENV",
    "DataFile",
    "MBPP_SPLITS",
    "PUBMEDQA_LABELS",
    "DataError",
    "Entity",
    "Example",
    "Metric",
    "World",
    "accuracy",
    "build_world",
    "data_dir",
    "detect_format",
    "exact_match",
    "extract_label",
    "f1_score",
    "get_metric",
    "load_hotpotqa",
    "load_amazon_sessions",
    "load_file",
    "load_jsonl_examples",
    "load_humaneval",
    "load_mbpp",
    "load_musique",
    "load_pubmedqa",
    "make_world",
    "metric_names",
    "normalize_answer",
    "pubmedqa_split",
    "split",
]
