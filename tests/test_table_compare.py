import itertools

import numpy as np
import pytest

from coalign.compare import (
    Lookup,
    Trajectory,
    draw_split,
    exhaustive,
    per_input_oracle,
    random_search,
    reinforce,
    tpe,
)


def grid_lookup(n_questions: int = 60, seed: int = 0) -> Lookup:
    """3 slots of sizes 4, 3, 2 (24 configs). Slot 0 option 3 and slot 1 option 2 each add
    reward; the start (all zeros) is the worst on average. Per-question noise on top."""
    rng = np.random.default_rng(seed)
    index = np.array(list(itertools.product(range(4), range(3), range(2))))
    quality = 0.2 + 0.3 * (index[:, 0] == 3) + 0.2 * (index[:, 1] == 2) + 0.02 * index[:, 2]
    scores = (rng.random((len(index), n_questions)) < quality[:, None]).astype(float)
    return Lookup(scores, ["a.x", "b.y", "c.z"], [4, 3, 2], index)


def test_split_is_seeded_and_disjoint():
    s = draw_split(50, (10, 15, 20), seed=3)
    assert len(s.train) == 10 and len(s.val) == 15 and len(s.test) == 20
    assert not (set(s.train) & set(s.val) or set(s.val) & set(s.test) or set(s.train) & set(s.test))
    assert draw_split(50, (10, 15, 20), seed=3) == s != draw_split(50, (10, 15, 20), seed=4)
    with pytest.raises(ValueError, match="split sizes"):
        draw_split(20, (10, 10, 10), seed=0)


def test_trajectory_returns_best_known_by_budget():
    t = Trajectory("m", [(10, 0, 0.3), (20, 5, 0.5), (30, 7, 0.5), (40, 2, 0.9)])
    assert t.at(5) is None
    assert t.at(10) == 0
    assert t.at(35) == 5  # the earlier of two ties
    assert t.at(1e9) == 2 and t.cost == 40


def test_lookup_maps_picks_to_configs():
    lk = grid_lookup()
    assert lk.config([0, 0, 0]) == 0
    assert lk.config([3, 2, 1]) == 23
    assert lk.score(0, [0, 1]) == pytest.approx(lk.scores[0, :2].mean())
    with pytest.raises(ValueError, match="index shape"):
        Lookup(lk.scores, ["a"], [24], lk.index)


def test_random_search_pays_val_size_per_config_and_starts_from_start():
    lk = grid_lookup()
    split = draw_split(60, (20, 20, 20), seed=0)
    t = random_search(lk, split, budget=130, seed=1)
    assert [c for _, c, _ in t.trials][0] == 0
    assert [cost for cost, _, _ in t.trials] == [20, 40, 60, 80, 100, 120]
    assert len({c for _, c, _ in t.trials}) == 6
    assert random_search(lk, split, 130, seed=1).trials == t.trials
    assert random_search(lk, split, 130, seed=2).trials != t.trials


def test_exhaustive_finds_the_best_on_validation():
    lk = grid_lookup()
    split = draw_split(60, (20, 20, 20), seed=0)
    t = exhaustive(lk, split)
    assert t.cost == 24 * 20
    best = t.at(t.cost)
    assert lk.score(best, split.val) == max(lk.score(c, split.val) for c in range(24))


@pytest.mark.parametrize("method", [tpe, reinforce])
def test_model_based_searches_beat_the_start_within_budget(method):
    lk = grid_lookup(n_questions=200, seed=1)
    gains = []
    for seed in range(5):
        split = draw_split(200, (60, 40, 100), seed=seed)
        t = method(lk, split, 600, seed)
        assert t.cost <= 600
        assert t.trials[-1][0] == t.cost
        picked = t.at(600)
        assert picked is not None
        gains.append(lk.score(picked, split.test) - lk.score(0, split.test))
    assert np.mean(gains) > 0.15  # the start averages 0.2, the best config 0.72


def test_tpe_charges_repeats_nothing_and_is_seeded():
    lk = grid_lookup()
    split = draw_split(60, (20, 20, 20), seed=0)
    t = tpe(lk, split, budget=24 * 20 + 5, seed=0)
    configs = [c for _, c, _ in t.trials]
    assert len(configs) == len(set(configs))  # each config charged once
    assert t.trials == tpe(lk, split, budget=24 * 20 + 5, seed=0).trials


def short_answer_table(directory, n_questions: int):
    """A greedy HotpotQA table built with a fake LM whose "Short answer." candidate answers
    every question right; every other request gets a unique wrong answer."""
    from coalign.runner import load_dataset
    from coalign.tables import Table, build_table
    from tests.fakes import FakeLM
    from tests.test_tables import _answer, make_space

    space = make_space(n_questions=n_questions, samples=0)
    gold = {e.inputs["question"]: e.target for e in load_dataset("hotpotqa", limit=n_questions)}

    def answer(request) -> str:
        text = " ".join(m.content for m in request.messages)
        if "Short answer." not in text:
            return _answer(request)
        return next(a for q, a in gold.items() if q in text)

    space.save(directory)
    build_table(directory, level="greedy",
                lm_factory=lambda m: FakeLM(answer, name=f"llamacpp:{m}"))
    return Table(directory)


def test_coalign_loop_as_a_method_on_a_table(tmp_path):
    """The loop on a table whose "Short answer." candidate answers every question right: its
    trajectory starts at the start config once stage 1 is paid, and what it returns at the
    largest budget is scored by lookup like any other method's."""
    from coalign.compare import coalign_method
    from coalign.data import split as data_split

    table = short_answer_table(tmp_path, 12)
    rewards = table.rewards()
    lookup = Lookup.of_table(rewards, table.space)
    split = draw_split(12, (4, 4, 4), seed=1)
    assert [list(p) for p in data_split(list(range(12)), [4, 4, 4], seed=1)] == \
        [list(split.train), list(split.val), list(split.test)]
    method = coalign_method(tmp_path, rewards.questions, max_iterations=6, settings={
        "backbone": "hashing", "budget": {"search_size": 2, "fresh_inputs": 2}})
    t = method(lookup, split, 10_000, 1)
    assert t.trials[0][1] == 0 and t.trials[0][0] > 0  # the start, after stage 1
    costs = [c for c, _, _ in t.trials]
    assert costs == sorted(costs)
    picked = t.at(t.cost)
    assert lookup.score(picked, split.test) == 1.0  # it found the right answer prompt
    with pytest.raises(Exception, match="every pool question finished"):
        coalign_method(tmp_path, rewards.questions[:6])


def test_compare_scores_every_method_and_reference_per_seed_and_budget():
    from coalign.compare import METHODS, REFERENCES, START, anytime_svg, compare

    lk = grid_lookup(n_questions=80, seed=2)
    result = compare(lk, sizes=(20, 20, 40), seeds=[0, 1, 2], budgets=[40, 200])
    assert set(result.scores) == {*METHODS, *REFERENCES}
    for by in result.scores.values():
        assert all(len(v) == 3 for v in by.values())
    assert result.scores[START][40] == result.start
    oracle = result.scores["per-question oracle on test"][200]
    best = result.scores["best global config on test"][200]
    assert all(o >= b for o, b in zip(oracle, best, strict=True))
    for method in METHODS:  # no method's pick beats the best config on test
        assert all(m <= b + 1e-12 for m, b in zip(result.scores[method][200], best, strict=True))
    assert result.exhaustive_cost == 24 * 20
    d = result.paired("random search", START, 200)
    assert d["mean"] == pytest.approx(np.mean(result.scores["random search"][200])
                                      - np.mean(result.start))
    svg = anytime_svg(result, metric="accuracy", title="toy <table>")
    assert svg.startswith("<svg") and "toy &lt;table&gt;" in svg
    assert all(name in svg for name in METHODS) and "stroke-dasharray" in svg
    assert set(result.to_json()["summary"]) == set(result.scores)


def test_line_chart_refuses_what_it_cannot_draw():
    from coalign.report._lines import SeriesPoint, line_chart

    with pytest.raises(ValueError, match="at least one point"):
        line_chart({}, x_label="x", y_label="y")
    with pytest.raises(ValueError, match="positive x"):
        line_chart({"a": [SeriesPoint(0, 1)]}, x_label="x", y_label="y", log_x=True)
    flat = line_chart({"a": [SeriesPoint(1, 0.5), SeriesPoint(2, 0.5)]}, x_label="runs",
                      y_label="score")
    assert flat.count("<circle") == 2 and "runs" in flat


def test_table_pairs_have_exact_labels_under_the_start_downstream(tmp_path):
    from coalign.runner import load_dataset
    from coalign.tables import table_pairs

    table = short_answer_table(tmp_path, 2)
    gold = {e.inputs["question"]: e.target for e in load_dataset("hotpotqa", limit=2)}
    questions = table.finished()
    answers = table_pairs(table, "answer_generator", questions)
    # per question: 2 k x 2 extractor prompts upstream, 2 answer prompts -> one pair each
    assert len(answers) == 2 * 4
    for pair in answers:
        assert not pair.is_tie and pair.m == 1 and pair.n == 2
        assert pair.chosen["answer"] == gold[pair.inputs["question"]]
        assert set(pair.inputs) == {"question", "info"}
    # the extractor's outputs all end in the start answer prompt, which is never right: ties
    extractor = table_pairs(table, "info_extractor", questions)
    assert len(extractor) == 2 * 2 and all(p.is_tie for p in extractor)
    with pytest.raises(ValueError, match="no tabled param"):
        table_pairs(table, "nothing", questions)


def test_every_method_runs_two_seeds_on_the_committed_table_fixture():
    """The whole comparison, coalign's loop included, on 8 real HotpotQA questions of the
    committed table (``coalign.tables._subset``): every method and reference gets a score per
    seed and budget, none of them above the best config on test."""
    from pathlib import Path

    from coalign.compare import METHODS, REFERENCES, coalign_method, compare
    from coalign.tables import Table

    fixture = Path(__file__).parent / "fixtures" / "tables" / "multihop_qa_8q"
    table = Table(fixture)
    rewards = table.rewards()
    lookup = Lookup.of_table(rewards, table.space)
    loop = coalign_method(fixture, rewards.questions, max_iterations=3, settings={
        "backbone": "hashing", "budget": {"search_size": 2, "fresh_inputs": 2}})
    per_input = coalign_method(fixture, rewards.questions, max_iterations=3, settings={
        "backbone": "hashing", "budget": {"search_size": 2, "fresh_inputs": 2},
        "per_instance": ["retriever.k"]})
    methods = {"coalign": (loop, True), "per-input": (per_input, True), **METHODS}
    # seeds in two worker processes: the loop arm pickles, and a per-instance system is added
    # to (and scored on) the worker's own copy of the lookup
    result = compare(lookup, sizes=(2, 3, 3), seeds=[0, 1], budgets=[60, 600], methods=methods,
                     workers=2)
    assert set(result.scores) == {*methods, *REFERENCES}
    best = result.scores["best global config on test"][600]
    for name in methods:
        for budget in (60, 600):
            got = result.scores[name][budget]
            assert len(got) == 2
            if name != "per-input":  # a per-input system can beat every global config
                assert all(0.0 <= g <= b + 1e-12 for g, b in zip(got, best, strict=True))
    # one process gives the same figures seed for seed
    again = compare(lookup, sizes=(2, 3, 3), seeds=[0, 1], budgets=[60, 600],
                    methods={"coalign": (loop, True), "random search": METHODS["random search"]})
    for name in ("coalign", "random search"):
        assert again.scores[name] == result.scores[name]
    assert again.start == result.start


def test_the_loop_arm_counts_steps_by_outcome_and_the_runs_spent():
    from types import SimpleNamespace

    from coalign.compare._loop_arm import _count
    from coalign.optimize._outcome import StepState

    stats: dict[str, float] = {}
    for state, after, spent in ((StepState.NO_CHANGE, None, 40.0), (StepState.REJECTED, 0.4, 70.0),
                                (StepState.STOPPED_EARLY, 0.3, 80.0),
                                (StepState.ACCEPTED, 0.5, 100.0)):
        _count(stats, SimpleNamespace(accepted=state is StepState.ACCEPTED, val_after=after,
                                      state=state), spent)
    assert stats == {"steps": 4, "accepted": 1, "validated": 3, "skipped": 1,
                     "stopped_early": 1, "spent": 100.0}


def test_a_system_outside_the_space_is_scored_on_the_questions_it_ran_on():
    lookup = grid_lookup(n_questions=6)
    n = lookup.n_configs
    number = lookup.add({1: 1.0, 4: 0.0, 5: 0.5})
    assert number == n and lookup.add({0: 0.25}) == n + 1
    assert lookup.score(number, [1, 4, 5]) == pytest.approx(0.5)
    assert lookup.score(n + 1, [0]) == 0.25
    with pytest.raises(ValueError, match=r"not run on questions \[2\]"):
        lookup.score(number, [1, 2])
    assert lookup.scores.shape[0] == n  # the space's own matrix (and its ceilings) unchanged


def test_the_loop_arm_scores_a_per_instance_system_by_running_it_on_test():
    from types import SimpleNamespace

    from coalign.compare._loop_arm import _system_index

    lookup = grid_lookup(n_questions=6)
    split = draw_split(6, (2, 2, 2), seed=0)
    space = SimpleNamespace(questions=[f"q{i}" for i in range(6)])
    test = [SimpleNamespace(id=f"q{i}") for i in split.test]
    ran = []

    def on_test(config, policies):
        ran.append(policies)
        return SimpleNamespace(scores=[0.75, 0.25],
                               traces=[SimpleNamespace(cost_s=lambda: 1.5)] * 2)

    job = SimpleNamespace(test=test, on_test=on_test, optimizer=SimpleNamespace(
        config="cfg", policies={("b", "y"): "digest"}))
    number = _system_index(job, lookup, split, space)
    assert ran == [{("b", "y"): "digest"}] and number == lookup.n_configs
    assert lookup.extra[0] == dict(zip(split.test, [0.75, 0.25], strict=True))
    assert lookup.cost(number, split.test) == 1.5  # its cost per query ran with it


def test_the_loop_arm_runs_a_config_whose_untabled_weights_moved():
    from types import SimpleNamespace

    from coalign.compare._loop_arm import _system_index

    lookup = grid_lookup(n_questions=6)
    split = draw_split(6, (2, 2, 2), seed=0)
    space = SimpleNamespace(questions=[f"q{i}" for i in range(6)],
                            params={"a.x": [0, 1, 2, 3], "b.y": [0, 1, 2], "c.z": [0, 1]})
    test = [SimpleNamespace(id=f"q{i}") for i in split.test]

    def config(w):
        data = {"a": {"x": 1}, "b": {"y": 0}, "c": {"z": 1}, "d": {"weights": w}}
        return SimpleNamespace(to_json=lambda: data)

    ran = []

    def on_test(cfg, policies):
        ran.append(cfg)
        return SimpleNamespace(scores=[1.0, 0.0],
                               traces=[SimpleNamespace(cost_s=lambda: 1.5)] * 2)

    def job(w):
        return SimpleNamespace(test=test, on_test=on_test, optimizer=SimpleNamespace(
            config=config(w), policies={}), task=SimpleNamespace(system=SimpleNamespace(
                default_config=lambda: config([0.0, 0.5]))))

    assert _system_index(job([0.0, 0.5]), lookup, split, space) == lookup.config([1, 0, 1])
    assert ran == []  # weights at their start: the lookup's own row
    assert _system_index(job([0.3, 0.5]), lookup, split, space) == lookup.n_configs
    assert len(ran) == 1 and lookup.extra[0] == dict(zip(split.test, [1.0, 0.0], strict=True))


def test_the_per_input_oracle_varies_only_the_named_slots():
    lookup = grid_lookup(n_questions=8, seed=1)
    questions = [0, 3, 5]
    start = 0  # (0, 0, 0)
    # one slot: per question, the best of the 2 values of c.z with a.x = b.y = 0
    rows = [lookup.config([0, 0, z]) for z in range(2)]
    want = lookup.scores[np.ix_(rows, questions)].max(axis=0).mean()
    assert per_input_oracle(lookup, start, ["c.z"], questions) == pytest.approx(want)
    # every slot: the per-question oracle over the whole space
    whole = lookup.scores[:, questions].max(axis=0).mean()
    assert per_input_oracle(lookup, start, ["a.x", "b.y", "c.z"], questions) == pytest.approx(whole)
    assert per_input_oracle(lookup, start, [], questions) == lookup.score(start, questions)


@pytest.mark.parametrize(("system", "samples"), [("next_item", 4), ("multihop_qa", None),
                                                 ("multihop_qa_rerank", None)])
def test_the_loop_arm_samples_only_policies_that_feed_no_llm(system, samples):

    from coalign.systems import SYSTEMS
    from coalign.tables import replay_policy_samples

    assert replay_policy_samples(SYSTEMS[system]("qwen2.5-0.5b")) == samples


def test_the_best_baseline_leaves_out_coalign_s_arms_and_the_references():
    from coalign.compare import EXHAUSTIVE, best_baseline

    scores = {"coalign": {250: [0.9]}, "coalign (warm start)": {250: [0.95]},
              EXHAUSTIVE: {250: [0.99]}, "optuna tpe": {250: [0.5]},
              "random search": {250: [0.6]}, "llm selector": {250: [0.6]}}
    assert best_baseline(scores, 250) == "random search"  # the first listed on a tie
    assert best_baseline({"coalign": {250: [0.9]}, EXHAUSTIVE: {250: [1.0]}}, 250) is None


def test_a_method_s_run_stats_are_averaged_over_the_seeds():
    """What a method's run reports (e.g. MIPROv2's refused calls) reaches the result file:
    the run at the largest budget, per seed, averaged."""
    from coalign.compare import Trajectory, compare

    def counting(lookup, split, limit, seed):
        t = Trajectory("counting")
        t.trials.append((10.0, 1, 0.5))
        t.stats.update(refused=float(seed + limit), runs=limit)
        return t

    lk = grid_lookup(n_questions=40, seed=1)
    result = compare(lk, sizes=(10, 10, 20), seeds=[0, 2], budgets=[40, 100],
                     methods={"counting": (counting, False), "again": (counting, True)})
    assert result.stats["counting"] == {"refused": 101.0, "runs": 100.0}
    assert result.stats["again"] == result.stats["counting"]
    assert result.to_json()["method_stats"] == result.stats
