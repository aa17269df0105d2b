"""Gold-free checks in the local reward (issue 40): evidence and weights from the pairs, scores,
save/load, stage 2, the code systems' example-test check, and a run and its resume on the
committed 1.5B/0.5B code table."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from coalign.errors import StoreError
from coalign.pairs import PreferencePair
from coalign.rewards import (
    Evidence,
    HashingBackbone,
    LocalRewardModel,
    TrainConfig,
    load_reward_model,
    save_reward_model,
)
from coalign.rewards._checks import MAX_WEIGHT, check_scores, evidence
from coalign.systems._code import PassesExampleTest

ROOT = Path(__file__).resolve().parents[1]
CHECK = PassesExampleTest("code")
RIGHT = ["def f(x):\n    return x * 2", "def f(x):\n    return 2 * x",
         "def f(x):\n    # twice\n    return x + x", "def f(y):\n    return y << 1"]
WRONG = ["def f(x):\n    return x + 2", "def f(x):\n    return x ** 2",
         "def f(x):\n    return x", "def f(x) return x"]


def pairs(n: int, flipped: int = 0) -> list[PreferencePair]:
    """``n`` pairs of a right and a wrong doubling function on the example test ``f(3) == 6``;
    the last ``flipped`` are labelled the other way (the downstream reward disagreed)."""
    out = []
    for i in range(n):
        a, b = RIGHT[i % len(RIGHT)], WRONG[(i // 2) % len(WRONG)]
        flip = i >= n - flipped
        out.append(PreferencePair("gen", f"q{i}", {"task": f"double it ({i})",
                                                   "example_test": "assert f(3) == 6"},
                                  {"code": a}, {"code": b}, float(not flip), float(flip),
                                  "b" if flip else "a"))
    return out


def model(**cfg) -> LocalRewardModel:
    return LocalRewardModel(HashingBackbone(), {"gen": "writes code"},
                            TrainConfig(use_embedding=False, **cfg), {"gen": (CHECK,)})


def test_the_example_test_check_runs_the_code_in_the_sandbox():
    x = {"example_test": "assert f(3) == 6"}
    assert [CHECK(x, {"code": c}) for c in RIGHT] == [1.0] * 4
    assert [CHECK(x, {"code": c}) for c in WRONG] == [0.0] * 4  # the last does not compile
    assert CHECK(x, {"code": "  "}) == 0.0
    assert CHECK({"example_test": ""}, {"code": RIGHT[0]}) == 0.0
    # an item without the field (a choice-keyed item) is not the check's to score
    assert CHECK(x, {"@model": "qwen2.5-1.5b"}) is None and CHECK({}, {"code": RIGHT[0]}) is None


def test_evidence_and_weight_follow_the_pairs():
    found = evidence(CHECK, pairs(20, flipped=2))
    assert (found.agreed, found.separated) == (18.0, 20)
    assert found.weight == pytest.approx(math.log(19 / 3))  # Laplace: (18 + 1) / (20 + 2)
    assert Evidence().weight == 0.0  # no evidence: the check changes nothing
    assert Evidence(3, 10).weight == 0.0  # below chance on the pairs: switched off
    assert Evidence(10_000, 10_000).weight == MAX_WEIGHT
    tie = PreferencePair("gen", "t", {"example_test": "assert f(3) == 6"}, {"code": RIGHT[0]},
                         {"code": RIGHT[1]}, 1.0, 0.0, "a")  # both pass: not separated
    assert evidence(CHECK, [tie]) == Evidence(0.0, 0)


def test_a_check_adds_its_weight_to_the_heads_score():
    train = pairs(20, flipped=2)
    plain = LocalRewardModel(HashingBackbone(), {"gen": "writes code"},
                             TrainConfig(use_embedding=False))
    plain.fit(train)
    checked = model()
    checked.fit(train)
    x = train[0].inputs
    items = [(x, {"code": c}) for c in RIGHT + WRONG] + [(x, {"@model": "big"})]
    passes = np.array([1.0] * 4 + [0.0] * 5)
    weight = math.log(19 / 3)
    assert checked.check_weights("gen") == [pytest.approx(weight)]
    # the head learns from the same pairs as without checks; the check adds weight × pass
    assert np.allclose(checked.score_batch("gen", items),
                       plain.score_batch("gen", items) + weight * passes)
    # residual heads learn what the check leaves over: the head differs, the sum rule holds
    residual = model(residual_heads=True)
    residual.fit(train)
    emb, feats = residual.encode("gen", items)
    head = residual.heads["gen"](emb, feats).detach().double().numpy()
    assert np.allclose(residual.score_batch("gen", items), head + weight * passes)
    assert not np.allclose(head, plain.score_batch("gen", items))
    assert np.allclose(check_scores((CHECK,), (0.0,), items), 0.0)
    off = model(use_checks=False)
    off.fit(train)
    assert off.check_weights("gen") == [0.0] and off.evidence == {}
    assert np.allclose(off.score_batch("gen", items), plain.score_batch("gen", items))


def test_stage_two_adds_the_fresh_pairs_evidence():
    reward = model(fresh_inputs=100)
    reward.fit(pairs(10))
    reward.adapt(pairs(6, flipped=3))
    assert reward.evidence["gen"] == [Evidence(13.0, 16)]
    assert reward.untrained().checks == reward.checks  # cross-validation keeps the checks


def test_saved_evidence_comes_back_only_with_the_checks(tmp_path):
    reward = model()
    reward.fit(pairs(12, flipped=1))
    folder = save_reward_model(reward, tmp_path / "lrf")
    items = [(pairs(1)[0].inputs, {"code": c}) for c in RIGHT[:2] + WRONG[:2]]
    back = load_reward_model(folder, HashingBackbone(), {"gen": (CHECK,)})
    assert back.evidence == reward.evidence
    assert np.allclose(back.score_batch("gen", items), reward.score_batch("gen", items))
    bare = load_reward_model(folder, HashingBackbone())  # no checks given: the heads alone
    assert bare.checks == {} and bare.evidence == {}
    renamed = PassesExampleTest("final_code")  # a check the folder does not know: no evidence
    assert load_reward_model(folder, HashingBackbone(), {"gen": (renamed,)}).evidence == {
        "gen": [Evidence()]}
    config = json.loads((folder / "config.json").read_text())
    config["checks"] = {"gen": [{"name": CHECK.name}]}
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(StoreError, match="checks are unreadable"):
        load_reward_model(folder, HashingBackbone(), {"gen": (CHECK,)})


def _job(run_dir: Path, iterations: int, **extra):
    from coalign.job import Job, parse_run_config

    raw = {"system": "code_gen", "data": "mbpp",
           "lm": f"replay:{ROOT / 'benchmarks' / 'tables' / 'code_gen_models'}",
           "backbone": "hashing", "split": {"train": 4, "val": 4, "test": 2},
           "budget": {"iterations": iterations, "rollout_n": 0, "proposals": "local"},
           "components": ["code_generator"], **extra}
    return Job.open(parse_run_config(raw), run_dir)


def test_a_run_weighs_the_declared_checks_and_a_resume_restores_them(tmp_path):
    job = _job(tmp_path / "run", 2)
    assert set(job.optimizer.reward.checks) == {"code_generator", "reviser"}
    job.optimizer.run()
    found = job.optimizer.reward.evidence
    assert found["code_generator"][0].separated > 0
    job.store.close()
    resumed = _job(tmp_path / "run", 2)  # as after a kill: the last checkpoint is loaded
    resumed.optimizer.prepare()
    assert resumed.optimizer.reward.checks.keys() == {"code_generator", "reviser"}
    assert resumed.optimizer.reward.evidence == found
    resumed.store.close()
    off = _job(tmp_path / "off", 1, reward_checks=False)
    off.optimizer.run()
    assert off.optimizer.reward.evidence == {}
    assert off.optimizer.reward.check_weights("code_generator") == [0.0]
    off.store.close()
