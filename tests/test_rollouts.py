import pytest

from coalign.component import FunctionComponent, LLMComponent
from coalign.data import Example
from coalign.errors import ConfigError
from coalign.lm import CachedLM
from coalign.params import TextValue
from coalign.rollouts import RolloutSpec, collect_pairs
from coalign.runtime import Runtime
from coalign.store import RunStore
from coalign.system import System
from coalign.systems import MODEL_SELECTOR_TOY, RETRIEVER_TOY
from coalign.task import Task
from tests.fakes import FakeLM


def test_toy_retriever_pairs_prefer_b_everywhere():
    task, examples = RETRIEVER_TOY.task(), RETRIEVER_TOY.examples()
    spec = RolloutSpec(param="option", alternatives=("A", "B"), choice_key=True)
    col = collect_pairs(task, "chooser", examples, task.system.default_config(), Runtime(), spec)
    assert len(col.pairs) == 4 and not col.ties
    # a per-instance choice is decided before the component runs: the option is the output
    assert all(p.chosen == {"@option": "B"} for p in col.pairs)
    assert col.pairs[0].reward_a == pytest.approx(0.2) and col.pairs[0].reward_b == 0.9


def test_model_selector_q5_is_a_tie_not_a_pair():
    task, examples = MODEL_SELECTOR_TOY.task(), MODEL_SELECTOR_TOY.examples()
    spec = RolloutSpec(param="option", alternatives=("X", "Y"), choice_key=True)
    col = collect_pairs(task, "chooser", examples, task.system.default_config(), Runtime(), spec)
    assert len(col.pairs) == 5 and len(col.ties) == 1
    assert col.ties[0].example_id.endswith("q5") and col.ties[0].is_tie
    with pytest.raises(ValueError, match="is a tie"):
        _ = col.ties[0].chosen


def sampled_system():
    # the "writer" emits a number that depends on the sample index; the judge is deterministic
    def writer(r):
        return str(r.sample_index % 3) if r.temperature > 0 else "1"

    lm = FakeLM(writer)
    gen = LLMComponent("writer", ["q"], "draft", "Write", model="m")
    check = FunctionComponent("score", lambda x, c, ctx: {"value": int(x["draft"])},
                              ["draft"], ["value"])
    task = Task(System("s", [gen, check], ["q"], "value"),
                lambda pred, ex: float(pred) / 2, "half")
    return task, lm


def test_sampled_candidates_every_unordered_pair_and_dedup(tmp_path):
    task, lm = sampled_system()
    cached = CachedLM(lm, tmp_path / "cache.sqlite")
    rt = Runtime(lms={"m": cached})
    ex = [Example("e1", {"q": "x"}, None)]
    col = collect_pairs(task, "writer", ex, task.system.default_config(), rt, RolloutSpec(n=6))
    # samples 0..5 give outputs 0,1,2,0,1,2: three distinct candidates -> three pairs
    assert len(col.pairs) == 3 and not col.ties
    got = {(p.output_a["draft"], p.output_b["draft"], p.label) for p in col.pairs}
    assert got == {("0", "1", "b"), ("0", "2", "b"), ("1", "2", "b")}
    assert col.pairs[0].n == 6 and col.pairs[0].inputs == {"q": "x"}
    calls = lm.calls
    again = collect_pairs(task, "writer", ex, task.system.default_config(), rt, RolloutSpec(n=6))
    assert lm.calls == calls  # a repeated collection is served by the response cache
    assert [p.digest for p in again.pairs] == [p.digest for p in col.pairs]


def test_pairs_are_stored_with_digests(tmp_path):
    task, lm = sampled_system()
    store = RunStore(tmp_path)
    ex = [Example(f"e{i}", {"q": str(i)}, None) for i in range(3)]
    col = collect_pairs(task, "writer", ex, task.system.default_config(),
                        Runtime(lms={"m": lm}), RolloutSpec(n=3), store=store)
    stored = store.pairs("writer")
    assert [p.digest for p in stored] == [p.digest for p in col.all]
    assert {p.example_id for p in stored} == {"e0", "e1", "e2"}


def test_downstream_completions_are_averaged():
    # downstream adds sampled noise: reward of a candidate is the mean over m completions
    def fn(x, c, ctx):
        return {"value": int(x["draft"]) + (ctx.sampling.sample_index if ctx.sampling else 0)}

    gen = LLMComponent("writer", ["q"], "draft", "Write", model="m")
    noisy = FunctionComponent("noisy", fn, ["draft"], ["value"])
    task = Task(System("s", [gen, noisy], ["q"], "value"), lambda p, e: float(p), "v")
    lm = FakeLM(lambda r: str(r.sample_index % 2) if r.temperature > 0 else "0")
    col = collect_pairs(task, "writer", [Example("e", {"q": "x"}, None)],
                        task.system.default_config(), Runtime(lms={"m": lm}),
                        RolloutSpec(n=2, m=3))
    (pair,) = col.pairs
    assert (pair.reward_a, pair.reward_b) == (pytest.approx(1.0), pytest.approx(2.0))
    assert pair.m == 3
    # cost: base run (2 executions) + n writer draws + n*m downstream completions
    assert col.account.equivalent_runs() == pytest.approx(1 + (2 + 2 * 3) / 2)


def test_candidates_are_drawn_back_to_back_before_downstream():
    # consecutive identical prompts let llama.cpp reuse the evaluated prompt; the requests (and
    # so the response cache keys) are the ones a run_from per candidate would make
    seen: list[tuple[str, int]] = []

    def handler(r):
        seen.append((r.messages[0].content, r.sample_index))
        return f"{r.messages[0].content[0]}{r.sample_index}"

    gen = LLMComponent("writer", ["q"], "draft", "Write", model="m")
    judge = LLMComponent("judge", ["draft"], "verdict", "Judge", model="m")
    task = Task(System("s", [gen, judge], ["q"], "verdict"), lambda p, e: float(len(p)), "v")
    collect_pairs(task, "writer", [Example("e", {"q": "x"}, None)],
                  task.system.default_config(), Runtime(lms={"m": FakeLM(handler)}),
                  RolloutSpec(n=3))
    assert seen == [("Write", 0), ("Judge", 0), ("Write", 0), ("Write", 1), ("Write", 2),
                    ("Judge", 0), ("Judge", 0), ("Judge", 0)]


def test_specs_pool_their_candidates_per_input():
    # samples of the current instruction give "0"/"1"; greedy under "Write" gives "1", under
    # "Draft" "2": pooled, the three distinct outputs are all compared with each other
    def writer(r):
        if r.temperature > 0:
            return str(r.sample_index % 2)
        return "2" if r.messages[0].content.startswith("Draft") else "1"

    task, _ = sampled_system()
    rt = Runtime(lms={"m": FakeLM(writer)})
    specs = [RolloutSpec(n=2),
             RolloutSpec(param="prompt", alternatives=(TextValue("Write"), TextValue("Draft")))]
    ex = [Example("e", {"q": "x"}, None)]
    col = collect_pairs(task, "writer", ex, task.system.default_config(), rt, specs)
    got = {(p.output_a["draft"], p.output_b["draft"]) for p in col.pairs}
    assert got == {("0", "1"), ("0", "2"), ("1", "2")}  # ("0", "2") spans the two specs
    assert all(p.n == 4 for p in col.pairs)
    separate = [collect_pairs(task, "writer", ex, task.system.default_config(), rt, s).pairs
                for s in specs]
    assert sum(map(len, separate)) == 2
    with pytest.raises(ConfigError, match="no rollout spec"):
        collect_pairs(task, "writer", ex, task.system.default_config(), rt, [])


def test_bad_specs():
    with pytest.raises(ConfigError, match="n >= 2"):
        RolloutSpec(n=1)
    with pytest.raises(ConfigError, match="both param and alternatives"):
        RolloutSpec(param="k")
    task, _ = sampled_system()
    with pytest.raises(ConfigError, match="no param 'k'"):
        collect_pairs(task, "writer", [], task.system.default_config(), Runtime(),
                      RolloutSpec(param="k", alternatives=(1, 2)))
