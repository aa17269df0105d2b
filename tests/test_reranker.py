import itertools
import math
import random
from collections import Counter

import pytest
import torch

from coalign.component import PassageReranker, PolicyComponent, plackett_luce_log_prob
from coalign.component._reranker import gumbel_top_k
from coalign.errors import ConfigError
from coalign.rewards import HashingBackbone
from coalign.runtime import Runtime, Sampling
from coalign.system import System

ORGS = ["acme", "globex", "initech", "umbrella", "hooli", "vandelay", "wonka", "stark", "wayne",
        "tyrell", "cyberdyne", "oscorp"]
PEOPLE = ["alice", "bruno", "chiara", "dmitri", "esther", "farid", "greta", "hiro", "ines",
          "jonas", "kemal", "lena"]


def rerank_inputs(n: int, seed: int = 0, n_passages: int = 4) -> list[dict]:
    """Questions whose answer passage (the founder) is never first among BM25-like candidates."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        org, person = ORGS[i % len(ORGS)], PEOPLE[(i * 5) % len(PEOPLE)]
        others = [o for o in ORGS if o != org]
        rng.shuffle(others)
        passages = [f"{o} sells {rng.choice(['paper', 'tools', 'cars', 'games'])} in "
                    f"{rng.choice(['spain', 'peru', 'chad', 'fiji'])}"
                    for o in others[: n_passages - 1]]
        passages.insert(1 + i % (n_passages - 1), f"{org} was founded by {person}")
        out.append({"question": f"who founded {org}", "candidates": passages, "answer": person})
    return out


def answer_first(inputs, outputs) -> float:
    """Synthetic reward: 1 when the passage naming the answer comes first."""
    first = (outputs["passages"] or [""])[0]
    return float(inputs["question"].split()[-1] in first and "founded" in first)


def reranker(keep=None, hidden=8, dim=64, **kw) -> PassageReranker:
    return PassageReranker("reranker", "question", "candidates", "passages", keep=keep,
                           backbone=HashingBackbone(dim), hidden=hidden, **kw)


def perturbed(comp: PassageReranker, seed: int = 0) -> torch.nn.Module:
    module = comp.params["scorer"].build(comp.params["scorer"].default)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape, generator=gen))
    return module


def test_plackett_luce_probabilities_sum_to_one():
    logits = torch.tensor([0.3, -1.2, 2.0])
    full = [math.exp(plackett_luce_log_prob(logits, order)) for order in
            itertools.permutations(range(3))]
    assert sum(full) == pytest.approx(1.0, abs=1e-6)
    prefix = [math.exp(plackett_luce_log_prob(logits, order)) for order in
              itertools.permutations(range(3), 2)]
    assert sum(prefix) == pytest.approx(1.0, abs=1e-6)
    # the first pick is a softmax of the logits
    assert math.exp(plackett_luce_log_prob(logits, [2])) == pytest.approx(
        float(torch.softmax(logits, 0)[2]))


def test_component_log_prob_is_a_distribution_over_orders_and_matches_its_sampler():
    comp = reranker(keep=2)
    module = perturbed(comp)
    x = {"question": "who founded acme", "candidates": ["acme was founded by alice",
                                                       "globex sells cars", "hooli sells paper"]}
    probs = {order: math.exp(comp.log_prob(module, x, {"passages": [x["candidates"][i]
                                                                    for i in order]}).detach())
             for order in itertools.permutations(range(3), 2)}
    assert sum(probs.values()) == pytest.approx(1.0, abs=1e-5)
    rng = random.Random(0)
    logits = comp.scores(module, x).tolist()
    counts = Counter(tuple(gumbel_top_k(logits, 2, rng)) for _ in range(4000))
    for order, p in probs.items():
        assert counts[order] / 4000 == pytest.approx(p, abs=0.03)


def test_default_reranker_keeps_the_incoming_order_and_keep():
    comp = reranker(keep=3)
    assert isinstance(comp, PolicyComponent)
    system = System("r", [comp], ["question", "candidates"], "passages")
    cfg = system.default_config()
    for x in rerank_inputs(5, n_passages=5):
        step = system.run_component("reranker", x, cfg, Runtime())
        assert step.outputs["passages"] == x["candidates"][:3]
    empty = system.run_component("reranker", {"question": "q", "candidates": []}, cfg, Runtime())
    assert empty.outputs == {"passages": []}
    with pytest.raises(ConfigError, match="keep"):
        reranker(keep=0)


def test_greedy_order_follows_the_scores():
    comp = reranker()
    system = System("r", [comp], ["question", "candidates"], "passages")
    module = perturbed(comp, seed=3)
    value = {k: v.detach().clone() for k, v in module.state_dict().items()}
    cfg = system.default_config().with_value("reranker", "scorer", value)
    x = rerank_inputs(1, n_passages=6)[0]
    scores = comp.scores(module, x).tolist()
    expected = [x["candidates"][i] for i in sorted(range(6), key=lambda i: -scores[i])]
    assert system.run_component("reranker", x, cfg, Runtime()).outputs["passages"] == expected


def test_sampling_is_reproducible_per_sample_index_and_diverse():
    comp = reranker()
    system = System("r", [comp], ["question", "candidates"], "passages")
    cfg = system.default_config()
    x = rerank_inputs(1, n_passages=4)[0]

    def draw(i, seed=0):
        return system.run_component("reranker", x, cfg, Runtime(seed=seed), example_id="e",
                                    sampling=Sampling(1.0, i)).outputs["passages"]

    assert [draw(i) for i in range(20)] == [draw(i) for i in range(20)]
    assert len({tuple(draw(i)) for i in range(20)}) > 1
    assert sorted(draw(0)) == sorted(x["candidates"])  # a permutation, nothing lost


def test_log_prob_rejects_outputs_that_are_not_among_the_inputs():
    comp = reranker()
    x = {"question": "q", "candidates": ["a", "b"]}
    with pytest.raises(ConfigError, match="not among"):
        comp.log_prob(perturbed(comp), x, {"passages": ["c", "a"]})


def test_multihop_reranker_is_opt_in_and_changes_nothing_untrained():
    from coalign.systems import multihop_qa
    from tests.fakes import FakeLM

    lm = FakeLM(lambda r: " ".join(r.messages[-1].content.split()[-6:]))
    paragraphs = [{"title": f"T{i}", "text": f"{ORGS[i]} was founded by {PEOPLE[i]} in {1900 + i}"}
                  for i in range(12)]
    x = {"question": "who founded acme and hooli", "paragraphs": paragraphs}
    plain = multihop_qa("m")
    ranked = multihop_qa("m", reranker=True, reranker_backbone=HashingBackbone(64))
    assert plain.system.order == ["question_rewriter", "retriever", "info_extractor",
                                  "answer_generator"]
    assert ranked.system.order == ["question_rewriter", "retriever", "reranker", "info_extractor",
                                   "answer_generator"]
    runs = [t.system.run("e", x, t.system.default_config(), Runtime(lms={"m": lm}))
            for t in (plain, ranked)]
    assert len(runs[1].step("retriever").outputs["candidates"]) == 10
    assert runs[0].step("info_extractor").inputs == runs[1].step("info_extractor").inputs
    assert runs[0].state["answer"] == runs[1].state["answer"]
    with pytest.raises(ConfigError, match="rerank_pool"):
        multihop_qa("m", reranker=True, rerank_pool=7)


@pytest.mark.slow
def test_minilm_reranker_defaults_to_the_incoming_order():
    from tests.rewards_support import minilm  # one MiniLM load shared by the suite

    comp = PassageReranker("reranker", "question", "candidates", "passages", keep=3,
                           backbone=minilm())
    assert comp.dim == 384
    system = System("r", [comp], ["question", "candidates"], "passages")
    cfg = system.default_config()
    for x in rerank_inputs(3, n_passages=5):
        assert system.run_component("reranker", x, cfg, Runtime()).outputs["passages"] == \
            x["candidates"][:3]
        drawn = system.run_component("reranker", x, cfg, Runtime(), sampling=Sampling(1.0, 0))
        assert set(drawn.outputs["passages"]) <= set(x["candidates"])
