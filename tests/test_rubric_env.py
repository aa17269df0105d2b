"""The search environment and the derived warm-up criteria, on a tiny in-test corpus."""

import pytest

from coalign.data._base import Example
from coalign.rubric import (
    Action,
    SearchEnv,
    Trajectory,
    derive_criteria,
    enumerate_successes,
    extract_spans,
    warmup_targets,
)

PARAGRAPHS = [
    {"title": "Mira Costa", "text": "Mira Costa is a painter born in Velden in 1961."},
    {"title": "The Blue Harbor", "text": "The Blue Harbor is a painting by Mira Costa."},
    {"title": "Velden", "text": "Velden is a town on the Oster river in Norland."},
    {"title": "Oster", "text": "The Oster is a river that floods every spring."},
]
EXAMPLE = Example(
    id="q1",
    inputs={"question": "Where was the painter of The Blue Harbor born?",
            "paragraphs": PARAGRAPHS},
    target="Velden",
    meta={"hops": ["The Blue Harbor", "Mira Costa"], "type": "bridge"},
)


def test_action_parse_and_render_round_trip():
    a = Action.parse("search[ Mira Costa ]")
    assert a == Action("search", "Mira Costa") and a.render() == "search[Mira Costa]"
    with pytest.raises(ValueError):
        Action.parse("look[x]")


def test_extract_spans_drops_sentence_stopwords_and_articles():
    spans = extract_spans("The Blue Harbor is by Mira Costa. It was shown in 1961.")
    assert spans == ["Blue Harbor", "Mira Costa", "1961"]


def test_episode_dynamics_and_gold_usefulness():
    env = SearchEnv(max_steps=3)
    traj = Trajectory(EXAMPLE)
    first = env.candidates(traj)
    assert first[0] == Action("search", EXAMPLE.inputs["question"])
    assert any(a.kind == "answer" for a in first)
    step = env.step(traj, Action("search", "The Blue Harbor painting"))
    assert step.observation.startswith("The Blue Harbor:") and step.gold_useful is True
    again = env.step(traj, Action("search", "The Blue Harbor painting"))
    assert again.passage == step.passage and again.gold_useful is False  # already seen
    last = env.candidates(traj)
    assert last and all(a.kind == "answer" for a in last)  # step 3 must answer
    with pytest.raises(ValueError):
        env.step(traj, Action("search", "Velden"))
    env.step(traj, Action("answer", "velden"))
    assert traj.done and traj.reward == 1.0 and env.candidates(traj) == []
    with pytest.raises(ValueError):
        env.step(traj, Action("answer", "Velden"))


def test_non_gold_passage_is_not_useful_and_wrong_answer_scores_zero():
    env = SearchEnv()
    traj = Trajectory(EXAMPLE)
    assert env.step(traj, Action("search", "Oster river floods")).gold_useful is False
    env.step(traj, Action("answer", "Norland"))
    assert traj.reward == 0.0


def test_bridge_question_is_solvable_through_candidates():
    env = SearchEnv()
    wins = enumerate_successes(env, EXAMPLE)
    assert wins and all(t.reward == 1.0 for t in wins)
    assert env.answer_recall(EXAMPLE)


def _played(*actions):
    env = SearchEnv()
    traj = Trajectory(EXAMPLE)
    for a in actions:
        env.step(traj, a)
    return traj


def test_derived_criteria_name_the_step_and_check_visible_text():
    traj = _played(Action("search", "The Blue Harbor"), Action("search", "Mira Costa"),
                   Action("answer", "Velden"))
    first = derive_criteria(traj, 0, 3)
    assert [c.verdict for c in first] == [1.0, 1.0, 1.0]
    assert "Blue Harbor" in first[0].text
    lead = derive_criteria(traj, 1, 5)
    assert lead[0].text.startswith("the query Mira Costa follows a lead")
    assert lead[0].verdict == 1.0
    answer = derive_criteria(traj, 2, 5)
    assert answer[0].text == "the answer Velden appears in a retrieved passage"
    assert answer[0].verdict == 1.0
    assert len(derive_criteria(traj, 2, 1)) == 1
    with pytest.raises(ValueError):
        derive_criteria(traj, 0, 6)


@pytest.mark.parametrize("mode", ["adaptive", "fixed", "none"])
@pytest.mark.parametrize("answer", ["Velden", "Norland"])
def test_warmup_targets_satisfy_the_decomposition_constraint(mode, answer):
    traj = _played(Action("search", "The Blue Harbor"), Action("answer", answer))
    targets = warmup_targets(traj, 3, mode)
    assert sum(t.score for t in targets) == pytest.approx(traj.reward, abs=1e-9)
    for t in targets:
        assert sum(t.dims) / len(t.dims) == pytest.approx(t.score, abs=1e-9)
        assert all(-1 <= d <= 1 for d in t.dims)
    # The grounded, correct answer gets more credit than the search only when it is correct.
    if answer == "Velden":
        assert targets[1].score > 0


def test_package_exports_are_complete():
    import coalign.rubric as pkg

    public = {n for n in vars(pkg) if not n.startswith("_")} - {"annotations"}
    modules = {n for n in public if type(getattr(pkg, n)).__name__ == "module"}
    assert set(pkg.__all__) == public - modules
    assert all(hasattr(pkg, n) for n in pkg.__all__)


@pytest.mark.parametrize("loader,rel", [("load_hotpotqa", "hotpotqa/hotpotqa_dev_unified.jsonl"),
                                        ("load_musique", None)])
def test_runs_on_the_real_multi_hop_datasets(shared_data, loader, rel):
    import random

    import coalign.data as data
    from coalign.rubric import random_rollout

    kwargs = {"path": shared_data / rel} if rel else {}
    examples = getattr(data, loader)(limit=15, **kwargs)
    env = SearchEnv()
    rng = random.Random(0)
    for example in examples:
        traj = random_rollout(env, example, rng)
        assert traj.done and traj.reward in (0.0, 1.0) and len(traj.steps) <= 3
        assert all(isinstance(s.gold_useful, bool) for s in traj.steps if s.action.kind == "search")
    # Some gold answers are reachable through the candidates once the gold paragraphs are seen.
    assert sum(env.answer_recall(e) for e in examples) > 0
