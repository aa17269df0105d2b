"""The in-process executors: results in item order, and an item's error is never swallowed."""

from __future__ import annotations

import pytest

from coalign.executors import SerialExecutor, ThreadExecutor


def _stops(item: int) -> int:
    if item == 2:
        next(iter(()))  # a StopIteration escaping the item's function
    return item * 10


@pytest.mark.parametrize("executor", [SerialExecutor(), ThreadExecutor(1), ThreadExecutor(3)])
def test_results_come_in_item_order(executor) -> None:
    assert list(executor.map(lambda x: x * 10, [3, 1, 2])) == [30, 10, 20]


@pytest.mark.parametrize("executor", [SerialExecutor(), ThreadExecutor(1), ThreadExecutor(3)])
def test_a_stop_iteration_from_an_item_is_an_error_not_the_end(executor) -> None:
    # the builtin map would end early here and the caller would see two items done of three
    with pytest.raises((RuntimeError, StopIteration)):
        list(executor.map(_stops, [1, 2, 3]))
