"""Users' own DSPy programs: ``optimize(program, trainset, metric)`` with coalign's loop.

Needs the bench extra (``pip install 'coalign[bench]'``). See docs/dspy.md.
"""

from coalign.dspy._components import PredictorComponent, component_name
from coalign.dspy._lm import CoalignLM
from coalign.dspy._optimize import ProgramResult, budget_spec, optimize
from coalign.dspy._system import ProgramSystem

__all__ = ["CoalignLM", "PredictorComponent", "ProgramResult", "ProgramSystem",
           "budget_spec", "component_name", "optimize"]
