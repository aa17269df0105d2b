"""Ready-made systems: ``multihop_qa`` and the reference's worked toys."""

from coalign.systems._multihop import multihop_qa
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

__all__ = ["HINT_TOY", "MODEL_SELECTOR_TOY", "RETRIEVER_TOY", "TOYS", "ProxySelector",
           "TableSelector", "Toy", "mean_reward", "multihop_qa", "rollout_picks"]
