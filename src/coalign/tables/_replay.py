"""LM backends over a replay table: one that records (builds) and one that only replays.

Both key a request as the live backend would (``request.digest("llamacpp:<model>")``), so a
table entry is exactly the response the live embedded model gave that request. Replayed
responses come back as served calls (``cached=False``) with the original token counts and
latency: cost and equivalent-run accounting read the same on replay as live.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType

from coalign.lm import LM, LMError, LMRequest, LMResponse
from coalign.tables._shards import Entry, ShardSet

_EXTRA = MappingProxyType({"local": True, "replay": True})


def backend_name(model: str) -> str:
    """The live backend a table's entries stand for (its name is part of the request key)."""
    return f"llamacpp:{model}"


class ReplayMiss(LMError):
    """A request outside the table; ``RunContext`` adds the component and question."""

    locate = True


def describe(request: LMRequest) -> str:
    """A short, one-line account of a request: which instruction, which sampling."""
    system = next((m.content for m in request.messages if m.role == "system"), "")
    shown = " ".join(system.split())
    shown = shown if len(shown) <= 60 else shown[:59] + "…"
    how = ("greedy" if request.temperature == 0
           else f"temperature {request.temperature} sample {request.sample_index}")
    return f"instruction {shown!r}, {how}"


def _response(entry: Entry) -> LMResponse:
    return LMResponse(entry.text, entry.prompt_tokens, entry.completion_tokens, entry.model,
                      False, entry.latency_s, extra=_EXTRA)


class ReplayLM:
    """Answers only from a table's entries; never calls a model.

    Args:
        shards: the table's loaded records.
        model: the model name this backend stands for (``qwen2.5-0.5b``).
        where: the table directory, for error messages.
    """

    def __init__(self, shards: ShardSet, model: str, where: str = "") -> None:
        self.shards = shards
        self.model = model
        self.where = where or str(shards.directory)
        self._backend = backend_name(model)

    @property
    def name(self) -> str:
        return f"replay:{self.model}"

    def generate(self, request: LMRequest) -> LMResponse:
        entry = self.shards.entries.get(request.digest(self._backend))
        if entry is None:
            raise ReplayMiss(f"not in replay table {self.where} (model {self.model}, "
                             f"{describe(request)}); the table answers only its candidate "
                             "space and question pool")
        return _response(entry)

    def close(self) -> None:
        return None


class RecordingLM:
    """Answers from the table, else from a donor table (copying the entry in), else calls
    ``inner`` and appends the response (table builds).

    ``donors``: entries of other tables of the same model and prompt layout; an identical
    request there has the answer a live call gives, provided that table was built with
    chunk-aligned prefix reuse. ``component`` and ``question`` label new entries (for status
    and debugging only).
    """

    def __init__(self, shards: ShardSet, inner: LM, model: str,
                 donors: Sequence[Mapping[str, Entry]] = ()) -> None:
        self.shards = shards
        self.inner = inner
        self.model = model
        self.donors = tuple(donors)
        self._backend = backend_name(model)
        self.calls = 0
        self.reused = 0
        self.llm_s = 0.0
        self.component = ""
        self.question = ""

    @property
    def name(self) -> str:
        return self._backend

    def generate(self, request: LMRequest) -> LMResponse:
        key = request.digest(self._backend)
        entry = self.shards.entries.get(key)
        if entry is not None:
            return _response(entry)
        for donor in self.donors:
            entry = donor.get(key)
            if entry is not None:  # the donor's cost record travels with it
                self.shards.append(key, replace(entry, component=self.component,
                                                question=self.question))
                self.reused += 1
                return _response(entry)
        response = self.inner.generate(request)
        self.calls += 1
        self.llm_s += response.latency_s
        self.shards.append(key, Entry(response.text, response.prompt_tokens,
                                      response.completion_tokens, response.model,
                                      response.latency_s, self.component, self.question))
        return response

    def close(self) -> None:
        self.inner.close()
