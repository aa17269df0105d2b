"""Contract suites for strategies, shipped with the package so plugins can reuse them (Optuna's
``optuna.testing`` pattern).

* ``coalign.testing.pytest_optimizers``: ``LocalOptimizerContract``, run over every local
  optimizer of every registered param kind (``optimizer_cases``).
* ``coalign.testing.pytest_lms``: ``LMContract``, run over every LM backend and wrapper.

A test file subclasses a contract and provides its ``case`` fixture::

    class TestMyOptimizers(LocalOptimizerContract):
        @pytest.fixture(params=optimizer_cases(kinds, LoopSettings(), contexts))
        def case(self, request):
            return request.param

The modules import pytest; this package's ``__init__`` does not, so importing ``coalign`` never
needs it.
"""
