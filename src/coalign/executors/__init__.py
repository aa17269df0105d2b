"""Executors: how items fan out and where model calls run (threads here, or Ray actors).

``RayExecutor`` lives in ``coalign.executors._ray`` and imports Ray only when built
(``pip install 'coalign[ray]'``).
"""

from coalign.executors._base import BaseExecutor, SerialExecutor, ThreadExecutor, WorkerLost
from coalign.executors._spec import ExecutorSpec, make_executor

__all__ = ["BaseExecutor", "ExecutorSpec", "SerialExecutor", "ThreadExecutor", "WorkerLost",
           "make_executor"]
