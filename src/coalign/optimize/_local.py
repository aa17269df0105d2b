"""The local optimizer of each param kind, chosen by name in the loop settings (and so in a run
config: ``text_optimizer``, ``weights_optimizer``). Every kind always gets one: a run that can
draw a param must be able to propose for it."""

from __future__ import annotations

from collections.abc import Callable

from coalign.errors import ConfigError
from coalign.optimize._base import BaseLocalOptimizer
from coalign.optimize._choice import ExpChoiceOptimizer
from coalign.optimize._pareto import ParetoTextOptimizer
from coalign.optimize._settings import LoopSettings
from coalign.optimize._text import TextOptimizer
from coalign.optimize._weights import ReinforceWeightsOptimizer

Build = Callable[[LoopSettings], BaseLocalOptimizer]

TEXT: dict[str, Build] = {
    "opro": lambda s: TextOptimizer(s.text_candidates, s.text_steps),
    # the beam search gets the evaluations OPRO spends in its reference 3 x 3
    "pareto": lambda s: ParetoTextOptimizer(budget=3 * s.text_candidates),
}
WEIGHTS: dict[str, Build] = {
    "reinforce": lambda s: ReinforceWeightsOptimizer(temperature=s.temperature, seed=s.seed),
    "ppo": lambda s: ReinforceWeightsOptimizer(temperature=s.temperature, seed=s.seed, ppo=True),
}


def local_optimizers(s: LoopSettings) -> dict[str, BaseLocalOptimizer]:
    """Param kind -> its local optimizer under ``s``."""
    for field, names, name in (("text_optimizer", TEXT, s.text_optimizer),
                               ("weights_optimizer", WEIGHTS, s.weights_optimizer)):
        if name not in names:
            raise ConfigError(f"loop setting {field}: unknown {name!r}; use one of {sorted(names)}")
    return {"text": TEXT[s.text_optimizer](s), "choice": ExpChoiceOptimizer(s.tau),
            "weights": WEIGHTS[s.weights_optimizer](s)}
