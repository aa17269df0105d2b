import pytest

from coalign.component import FunctionComponent, LLMComponent
from coalign.data import Example
from coalign.lm import CachedLM
from coalign.optimize import Gate, LoopSettings, Optimizer, paired_bootstrap, softmax
from coalign.params import Choice
from coalign.rewards import HashingBackbone, LocalRewardModel
from coalign.runtime import Runtime
from coalign.store import RunStore
from coalign.system import System
from coalign.task import Task
from tests.fakes import FakeLM


def test_softmax_reference_check_figure():
    probs = softmax([0.62, 0.58, 0.51])
    assert [round(p, 3) for p in probs] == [0.350, 0.336, 0.314]
    assert softmax([1.0, 1.0], tau=0.1) == pytest.approx([0.5, 0.5])
    with pytest.raises(ValueError, match="tau"):
        softmax([1.0], tau=0)


def test_gate_is_strict_and_bootstrap_is_stricter():
    assert not Gate().accept([0.5, 0.5], [0.5, 0.5])  # a tie is rejected
    assert Gate().accept([0.5, 0.6], [0.5, 0.5])
    noisy_new, noisy_old = [1, 0, 1, 0, 1, 1], [0, 1, 0, 1, 1, 0.9]
    assert Gate().accept(noisy_new, noisy_old)
    assert not Gate("bootstrap", confidence=0.9).accept(noisy_new, noisy_old)
    assert Gate("bootstrap").accept([1.0] * 10, [0.0] * 10)
    mean, lo, hi, p = paired_bootstrap([1.0] * 5, [0.0] * 5)
    assert (mean, lo, hi, p) == (1.0, 1.0, 1.0, 1.0)


def writer_lm():
    # "good" when the instruction asks for concision, else "bad"; sampling alternates
    def answer(r):
        if r.temperature > 0:
            return "good" if r.sample_index % 2 == 0 else "bad"
        return "good" if "concise" in r.messages[0].content.lower() else "bad"
    return FakeLM(answer)


def toy_task():
    writer = LLMComponent("writer", ["q"], "draft", "Write something.", model="m")
    pick = FunctionComponent("pick", lambda x, c, ctx: {"level": c["level"]}, ["q"], ["level"],
                             params={"level": Choice([1, 2, 3], 1)})
    join = FunctionComponent("join", lambda x, c, ctx: {"score": (x["draft"] == "good") + 0.1 *
                                                        x["level"]}, ["draft", "level"], ["score"])
    return Task(System("toy", [writer, pick, join], ["q"], "score"), lambda p, e: float(p), "s")


def make_optimizer(tmp_path, lm, iterations=6, **settings):
    task = toy_task()
    train = [Example(f"t{i}", {"q": f"train {i}"}, None) for i in range(6)]
    val = [Example(f"v{i}", {"q": f"val {i}"}, None) for i in range(4)]
    rt = Runtime(lms={"m": CachedLM(lm, tmp_path / "cache.sqlite")})
    reward = LocalRewardModel(HashingBackbone(64), {"writer": "writes", "pick": "picks"})
    # Algorithm 1's own steps unless a test asks for the portfolio (the run config's default)
    settings.setdefault("proposals", "local")
    loop = LoopSettings(iterations=iterations, search_size=3, fresh_inputs=2, rollout_n=4,
                        seed=1, **settings)
    return Optimizer(task, train, val, rt, RunStore(tmp_path), reward, loop)


def test_loop_improves_and_only_accepts_strict_gains(tmp_path):
    lm = writer_lm()
    opt = make_optimizer(tmp_path, lm)
    history = opt.run()
    assert len(history) == 6
    assert opt.val_score > 0.1 + 1e-9  # started at level 1 with "bad" drafts
    for rec in history:
        if rec.accepted:
            assert rec.val_after > rec.val_before
    steps = opt.store.steps()
    assert [s for s, _, _ in steps] == list(range(6))
    for _, _, rec in steps:  # every proposal lists its candidates, best local reward first
        scores = [c["local_reward"] for c in rec["candidates"]]
        assert scores == sorted(scores, reverse=True)
        assert rec["reason"] == "no local reward yet: every stage-1 pair was a tie" or scores
    ledger = opt.ledger()
    assert ledger.runs["lrf_train"] > 0 and ledger.runs["validation"] > 0
    if any(r.accepted for r in history):
        assert ledger.runs["adapt"] > 0


def test_a_budget_stops_the_loop_after_the_step_that_spent_it(tmp_path):
    full = make_optimizer(tmp_path / "full", writer_lm(), iterations=6)
    spent = []
    full.run(on_step=lambda rec: spent.append(full.account.equivalent_runs()))
    assert len(spent) == 6
    limit = spent[1]  # reached by the second step
    capped = make_optimizer(tmp_path / "capped", writer_lm(), iterations=6)
    history = capped.run(budget=limit)
    assert len(history) == 2 and capped.account.equivalent_runs() == limit
    assert [r.accepted for r in history] == [r.accepted for r in full.history[:2]]


def test_a_lazy_stage1_pays_one_component_before_each_step_and_validates_sooner(tmp_path):
    upfront = make_optimizer(tmp_path / "upfront", writer_lm())
    upfront.prepare()
    stage1 = upfront.account.equivalent_runs("lrf_train")
    lazy = make_optimizer(tmp_path / "lazy", writer_lm(), stage1="lazy")
    lazy.prepare()
    assert lazy.account.equivalent_runs("lrf_train") == 0 and not lazy.paid
    first = lazy.iteration(0)
    paid_first = lazy.account.equivalent_runs("lrf_train")
    assert 0 < paid_first < stage1 and len(lazy.paid) == 1
    assert first.component in lazy.paid or first.state.name == "NO_REWARD"
    lazy.iteration(1)
    assert set(lazy.paid) == {"writer", "pick"}  # every component with params, one a step
    assert sorted(lazy.store.get_meta("stage1_paid").values()) == [0, 1]
    lazy.store.close()
    # resumed, it pays nothing again: the payments are in the ledger's checkpoint
    resumed = make_optimizer(tmp_path / "lazy", writer_lm(), stage1="lazy")
    resumed.prepare()
    assert set(resumed.paid) == {"writer", "pick"}
    spent = resumed.account.equivalent_runs("lrf_train")
    resumed.iteration(2)
    assert resumed.account.equivalent_runs("lrf_train") == spent
    resumed.store.close()


def test_a_lazy_payment_killed_before_its_step_is_paid_again(tmp_path):
    lazy = make_optimizer(tmp_path, writer_lm(), stage1="lazy")
    lazy.prepare()
    lazy.iteration(0)
    first = dict(lazy.paid)
    # the next payment, then the process dies before step 1 is written
    lazy._pay_next(1, lazy.targets)
    assert len(lazy.paid) == 2
    lazy.store.close()
    resumed = make_optimizer(tmp_path, writer_lm(), stage1="lazy")
    resumed.prepare()
    assert resumed.paid == first  # the lost payment is not taken for paid
    resumed.iteration(1)
    assert len(resumed.paid) == 2
    resumed.store.close()


def test_killed_loop_resumes_without_losing_steps_or_repeating_calls(tmp_path):
    lm = writer_lm()
    opt = make_optimizer(tmp_path / "a", lm)

    class Killed(Exception):
        pass

    def die(rec):
        if rec.step == 2:
            raise Killed

    with pytest.raises(Killed):
        opt.run(on_step=die)
    before = opt.store.steps()
    assert [s for s, _, _ in before] == [0, 1, 2]
    opt.store.close()  # the killed process's end releases the run dir
    calls = lm.calls
    resumed = make_optimizer(tmp_path / "a", lm)
    resumed.run()
    after = resumed.store.steps()
    assert [s for s, _, _ in after] == list(range(6))
    assert after[:3] == before  # no ledger entry lost or rewritten
    last_accepted = [r for _, st, r in before if st == "accepted"]
    if last_accepted:
        assert resumed.history[0].val_before == pytest.approx(last_accepted[-1]["val_after"])
    # resuming replays stage 1 and validation from the store and the cache: calls only grow
    # by the new steps' own work
    assert lm.calls >= calls
    resumed.store.close()
    rerun = make_optimizer(tmp_path / "a", lm)
    n = lm.calls
    rerun.run()  # everything done: nothing to do, no LLM call
    assert lm.calls == n and rerun.history == []


def test_pareto_search_as_text_local_optimizer(tmp_path):
    from coalign.optimize import ParetoTextOptimizer
    from coalign.optimize._pareto import instruction_of

    assert instruction_of("## Objective\nSay hi.") == "Say hi."
    assert instruction_of("## Objective\nA\n\n## Output Format\nB").startswith("## Objective")
    lm = writer_lm()
    opt = make_optimizer(tmp_path, lm, iterations=4)
    pareto = ParetoTextOptimizer(budget=6, beam_width=3, max_rounds=2)
    opt.optimizers["text"] = pareto
    opt.run()
    writer_steps = [r for r in opt.history if r.component == "writer"]
    assert writer_steps and pareto.last_state is not None
    assert pareto.last_state.converged and pareto.last_state.baseline
    scored = [c for c in pareto.last_state.candidates.values() if c.scored]
    assert len(scored) >= 3  # cold start scored every seed
    # an edit asking for concision makes "good" drafts: the search must find and propose it
    assert any("concise" in str(r.value).lower() for r in writer_steps)


def test_component_whose_pairs_were_all_ties_is_not_drawn(tmp_path):
    # the writer's samples always write "bad": every stage-1 pair is a tie, so it has no head
    opt = make_optimizer(tmp_path, FakeLM(lambda r: "bad"), iterations=4)
    history = opt.run()
    assert not opt.reward.can_score("writer") and opt.reward.can_score("pick")
    assert {r.component for r in history} == {"pick"}


def test_no_local_reward_at_all_records_a_skipped_step(tmp_path):
    task = Task(System("w", [LLMComponent("writer", ["q"], "draft", "Write.", model="m")], ["q"],
                       "draft"), lambda p, e: 0.0, "s")
    train = [Example(f"t{i}", {"q": f"q{i}"}, None) for i in range(3)]
    reward = LocalRewardModel(HashingBackbone(64), {"writer": "writes"})
    opt = Optimizer(task, train, train, Runtime(lms={"m": FakeLM(lambda r: "same")}),
                    RunStore(tmp_path), reward,
                    LoopSettings(proposals="local", iterations=2, seed=0,
                                 terminal_reward="learned"))  # a head, not the metric
    history = opt.run()
    assert [r.accepted for r in history] == [False, False]
    assert all("tie" in r.reason and r.val_after is None for r in history)


def test_stage1_alignment_is_cross_validated_over_every_decisive_pair(tmp_path):
    opt = make_optimizer(tmp_path, writer_lm(), iterations=0)
    opt.prepare()
    alignment = opt.store.get_meta("lrf_alignment")
    for comp in ("writer", "pick"):
        decisive = [p for p in opt.store.pairs(comp) if not p.is_tie]
        assert alignment[comp]["pairs"] == len(decisive) > 0  # each tested exactly once
        assert 0.0 <= alignment[comp]["accuracy"] <= 1.0
        inputs = {p.example_id for p in decisive}
        assert alignment[comp]["inputs"] == len(inputs)
        assert 0.0 <= alignment[comp]["input_accuracy"] <= 1.0
    assert alignment["writer"]["accuracy"] >= 0.75  # "good" vs "bad" drafts: easy to learn


def test_components_aligned_no_better_than_chance_are_not_drawn(tmp_path):
    opt = make_optimizer(tmp_path, writer_lm(), iterations=4)
    opt.prepare()
    measured = opt.store.get_meta("lrf_alignment")
    opt.store.set_meta("lrf_alignment", {**measured, "pick": {"pairs": 12, "accuracy": 0.5}})
    assert {r.component for r in opt.run()} == {"writer"}
    below = make_optimizer(tmp_path / "b", writer_lm(), iterations=1)
    below.prepare()
    below.store.set_meta("lrf_alignment", {c: {"pairs": 12, "accuracy": 0.25}
                                           for c in ("writer", "pick")})
    (rec,) = below.run()
    assert not rec.accepted and rec.val_after is None and "above 0.5" in rec.reason
    # measured on too few pairs to say anything: drawn as if unmeasured
    thin = make_optimizer(tmp_path / "c", writer_lm(), iterations=4)
    thin.prepare()
    thin.store.set_meta("lrf_alignment", {c: {"pairs": 4, "accuracy": 0.25}
                                          for c in ("writer", "pick")})
    assert {r.component for r in thin.run()} == {"writer", "pick"}


def test_steps_on_test_chains_each_accepted_step(tmp_path):
    from coalign.job import Job, parse_run_config

    opt = make_optimizer(tmp_path, writer_lm())
    history = opt.run()
    test = [Example(f"x{i}", {"q": f"test {i}"}, None) for i in range(5)]
    job = Job(parse_run_config({}), opt.task, opt.train, opt.val, test, opt.store, opt)
    rows = job.steps_on_test()
    assert [r["step"] for r in rows] == [r.step for r in history if r.accepted]
    assert rows, "the toy loop accepts at least one step"
    before, after = job.evaluate_test()
    assert rows[0]["test_before"] == before.mean_reward
    assert rows[-1]["test_after"] == after.mean_reward
    for prev, row in zip(rows, rows[1:], strict=False):
        assert row["test_before"] == prev["test_after"]
    assert all(r["holds"] == (r["test_after"] > r["test_before"]) for r in rows)


class NeverAccept(Gate):
    def accept(self, new, old):
        return False


def test_a_rejected_value_is_never_validated_again_under_the_same_config(tmp_path):
    # with every proposal rejected, the config never changes: each validated value is new, also
    # across a kill and resume (the rejections are rebuilt from the ledger)
    lm = writer_lm()
    opt = make_optimizer(tmp_path, lm, iterations=5)
    opt.s.gate = NeverAccept()
    opt.run()
    opt.store.close()
    resumed = make_optimizer(tmp_path, lm, iterations=10)
    resumed.s.gate = NeverAccept()
    resumed.run()
    validated = [(r["component"], r["param"], repr(r["value"])) for _, _, r in
                 resumed.store.steps() if r["reason"] == "validation did not improve"]
    assert validated and len(validated) == len(set(validated))
    assert resumed.at.rejected  # rebuilt on resume, then extended
    again = [r for _, _, r in resumed.store.steps()
             if r["reason"] == "already rejected under this config"]
    assert all(r["val_after"] is None for r in again)


def test_search_sample_and_fresh_inputs_move_through_the_train_split(tmp_path):
    from coalign.optimize._settings import window
    from coalign.optimize._step import Position, fresh_batch, search_sample

    assert [window("abcde", t, 2) for t in range(3)] == [["a", "b"], ["c", "d"], ["e", "a"]]
    assert window("abc", 1, 5) == ["a", "b", "c"] and window("", 4, 3) == []
    opt = make_optimizer(tmp_path, writer_lm())  # 6 train inputs, search samples of 3
    at = Position(opt.config, {}, {}, frozenset(), opt.reward)
    samples = [search_sample(opt._env(), at, "writer", t) for t in range(3)]
    assert [[x["q"] for _, x in s] for s in samples] == [
        ["train 0", "train 1", "train 2"], ["train 3", "train 4", "train 5"],
        ["train 0", "train 1", "train 2"]]
    # each input with the train example it came from (what an exact reward scores against)
    assert [e.id for e, _ in samples[1]] == ["t3", "t4", "t5"]
    assert [e.id for e in fresh_batch(opt._env(), 1)] == ["t2", "t3"]


def test_a_resumed_run_that_had_settled_or_spent_its_budget_adds_no_step(tmp_path):
    # found by benchmarks/kill_resume.py: a process killed after its settled step, resumed,
    # appended a second settled row, so its ledger differed from the uninterrupted run's
    settled = make_optimizer(tmp_path / "settled", writer_lm(), iterations=40,
                             components=["pick"])
    history = settled.run()
    assert history[-1].state.name == "SETTLED" and len(history) < 40
    settled.store.close()
    again = make_optimizer(tmp_path / "settled", writer_lm(), iterations=40,
                           components=["pick"])
    assert again.run() == [] and len(again.store.steps()) == len(history)
    again.store.close()
    capped = make_optimizer(tmp_path / "capped", writer_lm(), iterations=6)
    capped.prepare()
    limit = capped.account.equivalent_runs() + 1  # reached by the first step
    assert len(capped.run(budget=limit)) == 1
    capped.store.close()
    resumed = make_optimizer(tmp_path / "capped", writer_lm(), iterations=6)
    assert resumed.run(budget=limit) == [] and len(resumed.store.steps()) == 1
    resumed.store.close()


def test_components_pick_whole_components_or_single_params():
    from coalign.errors import ConfigError
    from coalign.optimize._settings import targets

    writer = LLMComponent("writer", ["q"], "draft", "Write something.",
                          model=Choice(["m", "m2"], "m"))
    task = toy_task()
    system = System("toy2", [writer, *task.system.components[1:]], ["q"], "score")
    assert targets(system, None) == [("writer", "prompt"), ("writer", "model"),
                                     ("pick", "level")]
    assert targets(system, ["writer"]) == [("writer", "prompt"), ("writer", "model")]
    assert targets(system, ["writer.model", "writer", "pick.level"]) == [
        ("writer", "model"), ("writer", "prompt"), ("pick", "level")]
    with pytest.raises(ConfigError, match=r"'writer' has no param 'modle'; its params are "
                                          r"\['model', 'prompt'\]"):
        targets(system, ["writer.modle"])
    with pytest.raises(ConfigError, match="unknown component 'writr'"):
        targets(system, ["writr.model"])


def test_a_run_told_one_param_steps_and_rolls_out_only_that_param(tmp_path):
    opt = make_optimizer(tmp_path, writer_lm(), iterations=3, components=["pick.level"])
    assert opt.targets == [("pick", "level")]
    history = opt.run()
    assert history and {(r.component, r.param) for r in history} == {("pick", "level")}
    start = opt.system.default_config()
    assert opt.config["writer"] == start["writer"]  # the writer's prompt never moved
