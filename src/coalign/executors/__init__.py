"""Executors: how items fan out and where model calls run (threads here, or Ray actors).

``RayExecutor`` is loaded on first access and imports Ray only when built
(``pip install 'coalign[ray]'``).
"""

from coalign.executors._base import BaseExecutor, SerialExecutor, ThreadExecutor, WorkerLost
from coalign.executors._spec import ExecutorSpec, make_executor


def __getattr__(name: str) -> object:
    if name == "RayExecutor":  # its module is light, but keep Ray's executor out of a plain import
        from coalign.executors._ray import RayExecutor

        return RayExecutor
    raise AttributeError(f"module 'coalign.executors' has no attribute {name!r}")


__all__ = ["BaseExecutor", "ExecutorSpec", "RayExecutor", "SerialExecutor", "ThreadExecutor",
           "WorkerLost", "make_executor"]
