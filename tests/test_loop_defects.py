"""Defects of issue 22, each reproduced first: stage-2 pairs under an accepted selector, the
selector frozen as validated, an optimizer for every param kind, the local-optimizer protocol."""

import dataclasses

import pytest

from coalign.errors import ConfigError
from coalign.job import Job, parse_run_config
from coalign.optimize import BaseLocalOptimizer, LocalView
from tests.selector_toy import examples, flip, selector_loop


def test_adaptation_after_an_accepted_selector_collects_pairs(tmp_path):
    opt = selector_loop(tmp_path)
    adapted = []
    live_adapt = opt.reward.adapt
    opt.reward.adapt = lambda pairs: adapted.extend(pairs) or live_adapt(pairs)
    (step,) = opt.run()
    assert step.accepted and step.value == "lrf-selector"
    # each fresh input compares the two words run under it, not the selector's pick twice
    decisive = [p for p in adapted if not p.is_tie]
    assert len(decisive) == 4 and {p.example_id for p in decisive} == {"t0", "t1", "t2", "t3"}
    assert all({p.chosen["@option"], p.rejected["@option"]} == {"alpha", "beta"}
               for p in decisive)


def test_an_accepted_selector_keeps_the_reward_it_was_validated_with(tmp_path):
    opt = selector_loop(tmp_path)
    opt.run()
    validated = {i: (t.reward, t.step("chooser").choices) for i, t in opt.val_traces.items()}
    assert all(r == 1.0 for r, _ in validated.values())
    flip(opt.reward)  # stage 2 keeps adapting the live reward
    rt = opt.runtime_for(opt.policies)
    again = {e.id: opt.task.score(opt.system.run(e.id, e.inputs, opt.config, rt), e)
             for e in opt.val}
    assert {i: (t.reward, t.step("chooser").choices) for i, t in again.items()} == validated
    # the old steps' test scores use each step's own selector, not the final live reward
    job = Job(parse_run_config({}), opt.task, opt.train, opt.val, examples("x", 4), opt.store,
              opt)
    (row,) = job.steps_on_test()
    assert row["test_after"] == 1.0
    _, after = job.evaluate_test()
    assert after.mean_reward == 1.0


def test_a_resumed_run_restores_the_frozen_selector(tmp_path):
    opt = selector_loop(tmp_path)
    opt.run()
    digest = dict(opt.policies)[("chooser", "option")]
    flip(opt.reward)
    opt.store.close()
    resumed = selector_loop(tmp_path, iterations=1)
    resumed.prepare()
    assert dict(resumed.policies) == {("chooser", "option"): digest}
    assert resumed.val_score == 1.0


@pytest.mark.parametrize("text", ["opro", "pareto"])
@pytest.mark.parametrize("weights", ["reinforce", "ppo"])
def test_every_param_kind_has_a_local_optimizer(tmp_path, text, weights):
    cfg = parse_run_config({"system": "multihop_qa_rerank", "backbone": "hashing",
                            "text_optimizer": text, "weights_optimizer": weights,
                            "split": {"train": 1, "val": 1, "test": 1}})
    opt = Job.open(cfg, tmp_path / "run").optimizer
    kinds = {spec.kind for c in opt.system.components for spec in c.params.values()}
    assert kinds == {"text", "choice", "weights"} and kinds <= set(opt.optimizers)
    assert opt.optimizers["weights"].ppo == (weights == "ppo")
    assert type(opt.optimizers["text"]).__name__ == {"opro": "TextOptimizer",
                                                      "pareto": "ParetoTextOptimizer"}[text]
    opt.store.close()


def test_an_unknown_weights_optimizer_names_the_field():
    with pytest.raises(ConfigError, match="field 'weights_optimizer'.*'reinforce' or 'ppo'"):
        parse_run_config({"weights_optimizer": "sgd"})


def test_the_local_optimizer_protocol_has_no_hook_the_loop_never_calls(tmp_path):
    hooks = {n for n in vars(BaseLocalOptimizer) if not n.startswith("_")}
    assert hooks == {"propose", "pick", "alternatives"}  # all called by the loop

    class Spy(BaseLocalOptimizer):
        calls: list[str] = []

        def propose(self, view):
            self.calls.append("propose")
            return [(view.current, 0.0)]

        def pick(self, scored, open_, current, rng):
            self.calls.append("pick")
            return current

        def alternatives(self, current, rng, k):
            self.calls.append("alternatives")
            return ()

    from tests.test_optimize_loop import make_optimizer, writer_lm

    opt = make_optimizer(tmp_path, writer_lm(), iterations=3)
    opt.s = dataclasses.replace(opt.s, text_alternatives=2)
    opt.optimizers["text"] = Spy()
    opt.run()
    assert {"propose", "pick", "alternatives"} <= set(Spy.calls)


def test_a_local_view_is_read_only_and_the_optimizer_returns_what_it_scored(tmp_path):
    from tests.test_optimize_loop import make_optimizer, writer_lm

    opt = make_optimizer(tmp_path, writer_lm(), iterations=0)
    opt.prepare()
    view = LocalView(opt.task, "pick", "level", opt.config, [{"q": "a"}], opt.reward,
                     opt.runtime, __import__("random").Random(0), opt.account)
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.config = opt.config  # type: ignore[misc]
    scored = opt.optimizers["choice"].propose(view)
    assert sorted(v for v, _ in scored) == [1, 2, 3]  # every option, with its local reward
    assert all(r == view.mean_reward(v) for v, r in scored)


def test_a_ledger_selector_without_its_frozen_reward_is_refused_on_resume(tmp_path):
    from coalign.errors import StoreError
    from coalign.store import RunStore

    opt = selector_loop(tmp_path / "new")
    opt.run()
    (_, state, rec) = opt.store.steps()[0]
    opt.store.close()
    del rec["selectors"]  # a row written before selectors were frozen
    with RunStore(tmp_path / "old") as store:
        store.put_step(0, state, rec)
    with pytest.raises(StoreError, match="old.*chooser.option without the digest"):
        selector_loop(tmp_path / "old").prepare()
