"""Language-model backends, response cache and usage meter."""

from coalign.lm._base import LM, LMError, LMRefusal, LMRequest, LMResponse, Message, chat
from coalign.lm._cache import CachedLM
from coalign.lm._factory import BACKENDS, REMOTE, EndpointSettings, LMSpec, make_lm, parse_spec
from coalign.lm._http import redact_url
from coalign.lm._llamacpp import LlamaCpp, LoadedModel, ModelPool, default_pool, default_threads
from coalign.lm._meter import MeteredLM, Price, PriceTable, Usage, UsageMeter
from coalign.lm._models import (
    BundledModel,
    ModelResolver,
    ResolvedModel,
    default_cache_dir,
    model_seconds,
)
from coalign.lm._openai import OpenAICompatible
from coalign.lm._prefill import PREFILL_CHUNK

__all__ = ["BACKENDS", "BundledModel", "CachedLM", "EndpointSettings", "LM", "LMError", "LMRefusal",
           "LMRequest", "LMResponse", "LMSpec", "LlamaCpp", "LoadedModel", "Message", "MeteredLM",
           "ModelPool", "ModelResolver", "OpenAICompatible", "PREFILL_CHUNK", "Price", "PriceTable",
           "REMOTE", "ResolvedModel", "Usage", "UsageMeter", "chat", "default_cache_dir",
           "default_pool", "default_threads", "make_lm", "model_seconds", "parse_spec",
           "redact_url"]
