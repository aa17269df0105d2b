"""Replay tables: every LLM output of a benchmark's candidate space computed once, committed as
append-only shards, and replayed with zero LLM calls (see docs/tables.md)."""

from coalign.tables._build import BuildReport, build_table, expand, pool_examples
from coalign.tables._outcomes import PendingOutcomes, TableOutcomes
from coalign.tables._pairs import table_pairs
from coalign.tables._pin import PinReport, pin_table
from coalign.tables._policy import check_policy_samples, replay_policy_samples
from coalign.tables._replay import RecordingLM, ReplayLM, ReplayMiss, backend_name
from coalign.tables._rewards import Rewards
from coalign.tables._run import REPLAY, replay_runtime, replay_task, run_task
from coalign.tables._shards import Done, Entry, ShardSet, TableError
from coalign.tables._space import CandidateSpace, Samples, config_indices
from coalign.tables._subset import subset_table
from coalign.tables._table import Table, TableStatus, find_tables

__all__ = [
    "REPLAY", "BuildReport", "CandidateSpace", "Done", "Entry", "PendingOutcomes", "PinReport",
    "RecordingLM", "ReplayLM", "ReplayMiss", "Rewards", "Samples", "ShardSet", "Table",
    "TableError", "TableOutcomes", "TableStatus", "backend_name", "build_table",
    "check_policy_samples", "config_indices", "expand", "find_tables", "pin_table",
    "pool_examples", "replay_policy_samples", "replay_runtime", "replay_task", "run_task",
    "subset_table", "table_pairs",
]
