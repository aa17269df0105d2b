import pytest

from coalign.component import Retriever
from coalign.errors import ConfigError
from coalign.runtime import Runtime
from coalign.system import System
from coalign.systems import SYSTEMS, multihop_qa

PARAGRAPHS = [{"title": "Rome", "text": "Rome is the capital of Italy."},
              {"title": "Paris", "text": "Paris is the capital of France."}]
INPUTS = {"query": "Paris France", "question": "What is the capital of Italy?",
          "paragraphs": PARAGRAPHS}


def _system(fields) -> System:
    return System("r", [Retriever("retriever", fields, "paragraphs", ks=(1, 2), default_k=1)],
                  ["query", "question", "paragraphs"], "passages")


def test_one_query_field_has_only_k():
    system = _system("query")
    assert set(system.component("retriever").params) == {"k"}
    step = system.run_component("retriever", INPUTS, system.default_config(), Runtime())
    assert [p["title"] for p in step.outputs["passages"]] == ["Paris"]


def test_query_choice_searches_with_the_chosen_field():
    system = _system(("query", "question"))
    spec = system.component("retriever").params["query"]
    assert list(spec.options) == ["query", "question"] and spec.default == "query"
    cfg = system.default_config()
    titles = {f: [p["title"] for p in system.run_component(
        "retriever", INPUTS, cfg.with_value("retriever", "query", f), Runtime()
    ).outputs["passages"]] for f in ("query", "question")}
    assert titles == {"query": ["Paris"], "question": ["Rome"]}


@pytest.mark.parametrize("fields", [(), ("query", "query"), ("paragraphs",)])
def test_bad_query_fields_are_refused(fields):
    with pytest.raises(ConfigError, match="query fields"):
        Retriever("retriever", fields, "paragraphs")


def test_multihop_query_source_is_a_knob_only_when_asked():
    plain = SYSTEMS["multihop_qa"]("qwen2.5-0.5b").system.component("retriever")
    assert set(plain.params) == {"k"} and plain.inputs == ("query", "paragraphs")
    two = multihop_qa(query_sources=("query", "question")).system.component("retriever")
    assert list(two.params["query"].options) == ["query", "question"]
    assert two.params["query"].default == "query"


def test_an_index_is_built_once_per_corpus_and_reused_by_later_searches():
    from coalign.component import _retriever

    system = _system(("query", "question"))
    corpus = [{"title": f"Doc {i}", "text": f"unique-corpus-{id(system)} text {i}"}
              for i in range(3)]
    inputs = {**INPUTS, "paragraphs": corpus}
    cfg = system.default_config()
    system.run_component("retriever", inputs, cfg, Runtime())
    cache = _retriever._INDEXES
    hits, misses = cache.hits, cache.misses
    for field in ("query", "question"):
        system.run_component("retriever", inputs, cfg.with_value("retriever", "query", field),
                             Runtime())
    assert (cache.hits - hits, cache.misses - misses) == (2, 0)
