"""DSPy's MIPROv2 as a comparison method on the committed 8-question HotpotQA table, with the
real ReplayLM: candidates limited to the table's, off-table pairings refused and counted."""

import pickle
from pathlib import Path

import pytest

pytest.importorskip("dspy")

from coalign.compare import Lookup, compare, draw_split, mipro_method  # noqa: E402
from coalign.errors import ConfigError  # noqa: E402
from coalign.optimize._dspy import CoalignEngine  # noqa: E402
from coalign.tables import CandidateSpace, ReplayLM, ReplayMiss, Table  # noqa: E402

TABLE = Path(__file__).parent / "fixtures" / "tables" / "multihop_qa_8q"
SIZES = (2, 4, 2)  # train / val / test of the 8 questions


@pytest.fixture(scope="module")
def lookup() -> Lookup:
    table = Table(TABLE)
    return Lookup.of_table(table.rewards(), table.space)


@pytest.fixture
def calls(monkeypatch):
    """Every request the table saw (answered or refused) and every DSPy LM call."""
    seen = {"answered": 0, "refused": 0, "dspy_lm": 0}
    replay, engine = ReplayLM.generate, CoalignEngine.complete

    def generate(self, request):
        try:
            out = replay(self, request)
        except ReplayMiss:
            seen["refused"] += 1
            raise
        seen["answered"] += 1
        return out

    def complete(self, request):
        seen["dspy_lm"] += 1
        return engine(self, request)

    monkeypatch.setattr(ReplayLM, "generate", generate)
    monkeypatch.setattr(CoalignEngine, "complete", complete)
    return seen


def test_mipro_searches_only_table_configs_within_budget(lookup, calls):
    questions = Table(TABLE).rewards().questions
    method = mipro_method(TABLE, questions, minibatch_size=2)  # val 4 > 2: minibatch trials
    split = draw_split(len(questions), SIZES, seed=0)
    limit = 60
    t = method(lookup, split, limit, 0)

    assert t.trials and t.trials[0][:2] == (len(split.val), 0)  # the start on val, first
    for _, config, score in t.trials:  # a table config, scored as the lookup scores it
        assert 0 <= config < lookup.n_configs
        assert score == pytest.approx(lookup.score(config, split.val))
    assert [c for c, _, _ in t.trials] == sorted(c for c, _, _ in t.trials)
    assert t.stats["spent"] <= limit + len(split.val) and t.cost <= t.stats["spent"]
    assert t.stats["minibatches"] == t.stats["planned_trials"] > 0
    # the spend is metered run by run: minibatches of 2 and full evaluations of 4
    assert t.stats["spent"] == 2 * t.stats["minibatches"] + 4 * t.stats["full_evals"]
    # off-table pairings reached the table and were refused, each counted; no proposer call
    assert t.stats["refused"] == calls["refused"] > 0 and calls["answered"] > 0
    assert calls["dspy_lm"] == 0

    again = method(lookup, split, limit, 0)
    assert again.trials == t.trials and again.stats == t.stats  # deterministic per seed
    other = method(lookup, draw_split(len(questions), SIZES, seed=1), limit, 1)
    assert other.trials != t.trials


def test_mipro_in_compare_reads_any_budget_from_one_run(lookup, calls):
    questions = Table(TABLE).rewards().questions
    method = mipro_method(TABLE, questions)  # val 4 <= 35: every trial a full evaluation
    assert method.anytime(SIZES[1])
    assert pickle.loads(pickle.dumps(method)) == method  # seeds can run in worker processes
    result = compare(lookup, sizes=SIZES, seeds=[0], budgets=[12, 28],
                     methods={"dspy miprov2": (method, True)})
    split = draw_split(len(questions), SIZES, seed=0)
    for budget in (12, 28):  # the answer of a run sized for that budget
        alone = method(lookup, split, budget, 0)
        assert alone.stats["spent"] <= budget
        assert result.picks["dspy miprov2"][budget] == [alone.at(budget)]
    assert calls["dspy_lm"] == 0


def test_table_without_text_params_is_refused_in_one_line(tmp_path):
    space = CandidateSpace.load(TABLE)
    CandidateSpace(space.system, space.dataset, space.questions, {"retriever.k": (3, 5)},
                   space.model, space.options).save(tmp_path)
    with pytest.raises(ConfigError, match="tables none") as err:
        mipro_method(tmp_path, space.questions)
    assert "\n" not in str(err.value)
