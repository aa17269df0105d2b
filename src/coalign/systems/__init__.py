"""Ready-made systems: ``multihop_qa``, ``pubmedqa_select``, ``code_gen`` (and its generator
alone, ``code_gen_single``), ``next_item`` and the reference's worked toys."""

from coalign.systems._code import code_gen, code_gen_single
from coalign.systems._grounded import GroundedAnswer
from coalign.systems._model_choice import model_param
from coalign.systems._multihop import multihop_qa
from coalign.systems._next_item import next_item
from coalign.systems._pubmed import pubmedqa_select
from coalign.systems._registry import MODEL_CHOICE, SYSTEMS, models_of
from coalign.systems._toys import (
    HINT_TOY,
    MODEL_SELECTOR_TOY,
    RETRIEVER_TOY,
    TOYS,
    ProxySelector,
    TableSelector,
    Toy,
    mean_reward,
    rollout_picks,
)

__all__ = ["HINT_TOY", "MODEL_CHOICE", "MODEL_SELECTOR_TOY", "RETRIEVER_TOY", "SYSTEMS", "TOYS",
           "GroundedAnswer",
           "ProxySelector", "TableSelector", "Toy", "code_gen", "code_gen_single",
           "mean_reward", "model_param",
           "models_of", "multihop_qa", "next_item", "pubmedqa_select", "rollout_picks"]
