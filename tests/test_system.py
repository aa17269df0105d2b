import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coalign.component import FunctionComponent, LLMComponent
from coalign.errors import ConfigError, GraphError
from coalign.params import Choice, Text
from coalign.runtime import Runtime, Sampling
from coalign.system import Loop, System
from tests.fakes import FakeLM


def fn(name, inputs, outputs, f, **kw):
    return FunctionComponent(name, lambda x, c, ctx: f(x, c), inputs, outputs, **kw)


def chain():
    a = fn("a", ["q"], ["u"], lambda x, c: {"u": x["q"] + c["suffix"]},
           params={"suffix": Choice(["!", "?"])})
    b = fn("b", ["u"], ["v"], lambda x, c: {"v": x["u"].upper()})
    side = fn("side", ["q"], ["w"], lambda x, c: {"w": len(x["q"])})
    d = fn("d", ["v", "w"], ["out"], lambda x, c: {"out": f"{x['v']}{x['w']}{c['tag']}"},
           params={"tag": Choice(["x", "y"])})
    return System("chain", [a, b, side, d], inputs=["q"], output="out")


def test_topological_order_and_full_run():
    s = chain()
    assert s.order == ["a", "side", "b", "d"]
    t = s.run("e1", {"q": "hi"}, s.default_config(), Runtime())
    assert t.state["out"] == "HI!2x"
    assert [st.component for st in t.steps] == ["a", "side", "b", "d"]


def test_descendants():
    s = chain()
    assert s.descendants("a") == {"b", "d"}
    assert s.descendants("side") == {"d"}
    assert s.descendants("d") == set()


@pytest.mark.parametrize("comp,param,value", [("a", "suffix", "?"), ("d", "tag", "y"),
                                              ("b", None, None)])
def test_run_from_equals_full_run(comp, param, value):
    s = chain()
    base = s.default_config()
    trace = s.run("e1", {"q": "hello"}, base, Runtime())
    new = base if param is None else base.with_value(comp, param, value)
    partial = s.run_from(comp, trace, new, Runtime())
    full = s.run("e1", {"q": "hello"}, new, Runtime())
    assert partial.outputs_equal(full)
    reused = {st.component for st in partial.steps if st.reused}
    assert reused == set(s.order) - s.descendants(comp) - {comp}


def test_run_from_reuses_upstream_llm_calls():
    lm = FakeLM(lambda r: r.messages[-1].content.split(":")[-1].strip() + "*")
    up = LLMComponent("up", ["q"], "u", "Rewrite", model="m")
    down = LLMComponent("down", ["u"], "ans", "Answer", model="m")
    s = System("two", [up, down], inputs=["q"], output="ans")
    rt = Runtime(lms={"m": lm})
    cfg = s.default_config()
    trace = s.run("e", {"q": "abc"}, cfg, rt)
    assert lm.calls == 2
    new = cfg.with_value("down", "prompt", "Answer briefly")
    partial = s.run_from("down", trace, new, rt)
    assert lm.calls == 3  # only the changed component re-ran
    assert partial.outputs_equal(s.run("e", {"q": "abc"}, new, rt))
    assert partial.usage().calls == 1 and partial.usage(include_reused=True).calls == 2


def test_graph_errors_name_the_culprit():
    a = fn("a", ["q"], ["u"], lambda x, c: {"u": 1})
    with pytest.raises(GraphError, match="duplicate component name 'a'"):
        System("s", [a, fn("a", ["q"], ["z"], lambda x, c: {"z": 1})], ["q"], "u")
    with pytest.raises(GraphError, match="reads field 'nope'"):
        System("s", [a, fn("b", ["nope"], ["v"], lambda x, c: {})], ["q"], "v")
    with pytest.raises(GraphError, match="cycle among components"):
        System("s", [fn("x", ["q", "v"], ["u"], lambda x, c: {}),
                     fn("y", ["u"], ["v"], lambda x, c: {})], ["q"], "v")
    with pytest.raises(GraphError, match="written by both"):
        System("s", [a, fn("b", ["q"], ["u"], lambda x, c: {})], ["q"], "u")
    s = System("s", [a], ["q"], "u")
    with pytest.raises(GraphError, match="unknown param 'zz' of component 'a'"):
        s.config({"a": {"zz": 1}})
    with pytest.raises(GraphError, match="unknown component 'b'"):
        s.config({"b": {}})
    with pytest.raises(GraphError, match="produced by no component"):
        System("s", [a], ["q"], "missing")


def test_bad_param_value_and_bad_outputs():
    s = chain()
    with pytest.raises(ConfigError, match="choice '!!' is not one of"):
        s.config({"a": {"suffix": "!!"}})
    bad = System("bad", [fn("a", ["q"], ["u"], lambda x, c: {"wrong": 1})], ["q"], "u")
    with pytest.raises(ConfigError, match="component 'a' returned \\['wrong'\\]"):
        bad.run("e", {"q": 1}, bad.default_config(), Runtime())


def test_conditional_edge_skips_component():
    a = fn("a", ["q"], ["u"], lambda x, c: {"u": x["q"]})
    b = fn("b", ["u"], ["v"], lambda x, c: {"v": "ran"}, when=lambda f: f["u"] > 0)
    s = System("s", [a, b], ["q"], "v")
    assert s.run("e", {"q": 1}, s.default_config(), Runtime()).state["v"] == "ran"
    t = s.run("e", {"q": -1}, s.default_config(), Runtime())
    assert t.state["v"] is None and t.steps[-1].skipped


def loop_system(max_iters=2):
    # retriever -> verifier; the verifier routes back with feedback until the count reaches 3
    retr = fn("retr", ["q"], ["docs"],
              lambda x, c: {"docs": (x["feedback"] or 0) + 1}, optional_inputs=["feedback"])
    ver = fn("ver", ["docs"], ["ok", "feedback"],
             lambda x, c: {"ok": x["docs"] >= 3, "feedback": x["docs"]})
    ans = fn("ans", ["docs", "ok"], ["out"], lambda x, c: {"out": (x["docs"], x["ok"])})
    loop = Loop("ver", "retr", when=lambda f: not f["ok"], max_iters=max_iters, carry=("feedback",))
    return System("loop", [retr, ver, ans], ["q"], "out", loops=[loop])


def test_loop_routes_back_with_a_bound():
    s = loop_system(max_iters=5)
    t = s.run("e", {"q": "x"}, s.default_config(), Runtime())
    assert t.state["out"] == (3, True)
    assert [st.key for st in t.steps] == [("retr", 0), ("ver", 0), ("retr", 1), ("ver", 1),
                                          ("retr", 2), ("ver", 2), ("ans", 0)]
    bounded = loop_system(max_iters=1)
    out = bounded.run("e", {"q": "x"}, bounded.default_config(), Runtime()).state["out"]
    assert out == (2, False)
    assert s.descendants("ver") == {"retr", "ans"}  # the back-edge makes the loop body dirty


def test_loop_requires_optional_carried_input():
    retr = fn("retr", ["q", "feedback"], ["docs"], lambda x, c: {})
    ver = fn("ver", ["docs"], ["feedback"], lambda x, c: {})
    with pytest.raises(GraphError, match="declare it in optional_inputs"):
        System("s", [retr, ver], ["q"], "docs",
               loops=[Loop("ver", "retr", when=lambda f: True, carry=("feedback",))])


def test_run_batch_keeps_order_and_matches_serial():
    s = chain()
    items = [(f"e{i}", {"q": "x" * i}) for i in range(20)]
    par = s.run_batch(items, s.default_config(), Runtime(max_workers=4))
    ser = s.run_batch(items, s.default_config(), Runtime(max_workers=1))
    assert [t.example_id for t in par] == [i for i, _ in items]
    assert all(a.outputs_equal(b) for a, b in zip(par, ser, strict=True))


def test_per_instance_choice_uses_selector():
    class PickLong:
        def select(self, component, param, inputs, options, default):
            return "strong" if len(inputs["q"]) > 3 else "cheap"

    lm_cheap, lm_strong = FakeLM(lambda r: "c"), FakeLM(lambda r: "s")
    comp = LLMComponent("gen", ["q"], "a", "Answer",
                        model=Choice(["cheap", "strong"], scope="per_instance"))
    s = System("sel", [comp], ["q"], "a")
    rt = Runtime(lms={"cheap": lm_cheap, "strong": lm_strong},
                 selectors={("gen", "model"): PickLong()})
    assert s.run("e", {"q": "abcdef"}, s.default_config(), rt).state["a"] == "s"
    t = s.run("e", {"q": "ab"}, s.default_config(), rt)
    assert t.state["a"] == "c" and t.steps[0].choices == {"model": "cheap"}


def test_sampling_override_sets_temperature_and_index():
    seen = []
    lm = FakeLM(lambda r: seen.append((r.temperature, r.sample_index)) or "ok")
    s = System("one", [LLMComponent("g", ["q"], "a", "Answer", model="m")], ["q"], "a")
    s.run("e", {"q": "x"}, s.default_config(), Runtime(lms={"m": lm}),
          sampling={"g": Sampling(0.8, 3)})
    assert seen == [(0.8, 3)]


def test_config_json_round_trip_and_digest():
    s = chain()
    cfg = s.config({"a": {"suffix": "?"}})
    again = s.config({}).__class__.from_json(s, cfg.to_json())
    assert again.digest == cfg.digest != s.default_config().digest
    text = System("t", [LLMComponent("g", ["q"], "a", "Say hi", model="m")], ["q"], "a")
    tc = text.default_config().with_value("g", "prompt", "New")
    assert isinstance(text.component("g").params["prompt"], Text)
    assert tc.to_json() == {"g": {"prompt": {"instruction": "New", "demos": []}}}


def kahn_fifo(names: list[str], parents: dict[str, set[str]]) -> list[str]:
    """The order as the hand-written sort gave it (replay tables were built with it): a FIFO of
    ready components, ties in declaration order."""
    indeg = {n: len(parents[n]) for n in names}
    ready, order = [n for n in names if indeg[n] == 0], []
    while ready:
        name = ready.pop(0)
        order.append(name)
        for n in names:
            if name in parents[n]:
                indeg[n] -= 1
                if indeg[n] == 0:
                    ready.append(n)
    return order


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_order_is_the_fifo_kahn_order_on_random_dags(data):
    n = data.draw(st.integers(1, 8))
    edges = data.draw(st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
                              .filter(lambda e: e[0] < e[1])))  # i -> j, acyclic by index
    declared = data.draw(st.permutations(range(n)))
    parents = {f"c{j}": {f"c{i}" for i, k in edges if k == j} for j in range(n)}
    comps = [fn(f"c{j}", ["q", *sorted(f"f{p[1:]}" for p in parents[f"c{j}"])], [f"f{j}"],
                lambda x, c: {}) for j in declared]
    s = System("dag", comps, ["q"], f"f{declared[-1]}")
    assert s.order == kahn_fifo([c.name for c in comps], parents)


def test_cycle_error_names_the_cycle_and_what_waits_on_it():
    with pytest.raises(GraphError) as err:
        System("s", [fn("x", ["q", "v"], ["u"], lambda x, c: {}),
                     fn("y", ["u"], ["v"], lambda x, c: {}),
                     fn("z", ["v"], ["w"], lambda x, c: {}),
                     fn("free", ["q"], ["o"], lambda x, c: {})], ["q"], "w")
    assert str(err.value) == ("cycle among components ['x', 'y', 'z']; use a Loop for routing "
                              "back")
