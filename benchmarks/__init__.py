"""The benchmark scripts: each measures one thing, prints a table and, with ``--json PATH``,
writes a result file (``benchmarks._results``) stamped with its command, commit and machine.

The scripts are modules of this package: run them from the repository root as
``python -m benchmarks.<script> [--json PATH] ...`` (``--help`` for each one's options), and
import them as ``from benchmarks import <script>`` (the tests do). Committed result files live
under ``benchmarks/results/``; ``benchmarks/RESULTS.md`` cites them.
"""
