"""Shared backbone, policy and rubric heads: shapes, cache consistency, determinism."""

import math

import pytest
import torch

from coalign.rubric import (
    ArcoModel,
    BackboneConfig,
    Policy,
    RubricModel,
    RubricSpec,
    SearchEnv,
    Trajectory,
    Vocab,
    build_encoder,
    load_checkpoint,
    random_rollout,
    roc_auc,
    save_checkpoint,
)
from coalign.rubric._model import pad_batch
from tests.test_rubric_env import EXAMPLE


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny tensors: one thread avoids OpenMP stalls on a busy shared machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _setup(seed=0):
    torch.manual_seed(seed)
    encoder = build_encoder([EXAMPLE], ["the answer appears in a retrieved passage"], 500)
    model = ArcoModel(BackboneConfig(len(encoder.vocab), d_model=32, n_layers=2, n_heads=4,
                                     d_ff=64)).eval()
    return model, encoder, SearchEnv()


def test_vocab_round_trip_and_oov_buckets():
    vocab = Vocab.build(["Mira Costa paints."], max_words=10, oov_buckets=8)
    ids = vocab.encode("Mira paints Zorblax")
    assert vocab.decode(ids[:2]) == "mira paints"
    assert vocab.n_special <= ids[2] < vocab.n_special + 8  # unknown word -> a bucket
    assert Vocab.from_json(vocab.to_json()).itos == vocab.itos


def test_prefix_cache_matches_a_full_pass():
    model, _, _ = _setup()
    full = torch.randint(0, 40, (2, 10))
    with torch.no_grad():
        h_full, _ = model(full)
        _, cache = model(full[:, :6])
        valid = torch.ones(2, 6, dtype=torch.bool)
        h_tail, _ = model(full[:, 6:], cache, valid, torch.tensor([6, 6]))
    assert torch.allclose(h_full[:, 6:], h_tail, atol=1e-5)


def test_padded_prefix_is_ignored():
    model, _, _ = _setup()
    seq = torch.randint(1, 40, (1, 7))
    with torch.no_grad():
        h_ref, _ = model(seq)
        prefix = torch.cat([seq[:, :4], torch.zeros(1, 3, dtype=torch.long)], dim=1)
        _, cache = model(prefix)
        valid = torch.tensor([[True] * 4 + [False] * 3])
        h, _ = model(seq[:, 4:], cache, valid, torch.tensor([4]))
    assert torch.allclose(h_ref[:, 4:], h, atol=1e-5)


def test_policy_logits_equal_full_sequence_scoring():
    model, encoder, env = _setup()
    policy = Policy(model, encoder, env)
    traj = Trajectory(EXAMPLE)
    cands = env.candidates(traj)
    state = policy.state_ids(traj)
    with torch.no_grad():
        logits = policy.logits([state], [cands])[0]
        for j, a in enumerate(cands):
            ids, lens = pad_batch([state + encoder.policy_action(a.kind, a.text)])
            h, _ = model(ids)
            assert float(model.policy_logit(h[0, -1])) == pytest.approx(float(logits[j]), abs=1e-4)


def test_rollout_is_seeded_and_greedy_is_deterministic():
    model, encoder, env = _setup()
    policy = Policy(model, encoder, env)
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    a = [[s.action for s in t.steps] for t in policy.rollout([EXAMPLE] * 4, g1)[0]]
    b = [[s.action for s in t.steps] for t in policy.rollout([EXAMPLE] * 4, g2)[0]]
    assert a == b
    trajs, decisions = policy.rollout([EXAMPLE, EXAMPLE], greedy=True)
    assert trajs[0].steps == trajs[1].steps and all(t.done for t in trajs)
    assert len(decisions) == sum(len(t.steps) for t in trajs)


@pytest.mark.parametrize("spec", [RubricSpec(k=3), RubricSpec(k=1), RubricSpec(k=5),
                                  RubricSpec(k=3, mode="fixed"), RubricSpec(k=1, mode="none"),
                                  RubricSpec(k=3, use_prefix=False)])
def test_rubric_scores_shape_range_and_mean(spec):
    model, encoder, env = _setup()
    import random
    trajs = [random_rollout(env, EXAMPLE, random.Random(i)) for i in range(3)]
    rubric = RubricModel(model, encoder, spec)
    contexts = rubric.contexts(trajs)
    crits = rubric.criteria(contexts)
    assert all(len(c) == spec.n_dims for c in crits)
    assert all(len(tokens) <= encoder.criterion_tokens for c in crits for tokens in c)
    out = rubric.forward(contexts, crits)
    assert out.dims.shape == (len(contexts), spec.n_dims)
    assert float(out.dims.detach().abs().max()) <= 1.0
    assert torch.allclose(out.scores, out.dims.mean(-1))
    if spec.mode == "adaptive":
        n_tokens = sum(len(t) + 1 for c in crits for t in c)
        assert out.lm_logits.shape[0] == out.lm_targets.shape[0] == n_tokens
    notes = rubric.annotate(trajs)
    assert [len(n) for n in notes] == [len(t.steps) for t in trajs]
    assert notes == rubric.annotate(trajs)  # greedy criteria: deterministic


def test_no_prefix_context_is_shorter():
    _, encoder, env = _setup()
    import random
    traj = random_rollout(SearchEnv(max_steps=3), EXAMPLE, random.Random(1))
    steps = [(s.action.kind, s.action.text, s.observation) for s in traj.steps]
    if len(steps) > 1:
        assert len(encoder.rubric_context(traj.question, steps, False)) < len(
            encoder.rubric_context(traj.question, steps, True))


def test_roc_auc_known_values():
    assert roc_auc([0.1, 0.4, 0.35, 0.8], [False, False, True, True]) == pytest.approx(0.75)
    assert roc_auc([1.0, 1.0], [True, False]) == pytest.approx(0.5)
    assert math.isnan(roc_auc([0.3], [True]))


def test_checkpoint_round_trip(tmp_path):
    model, encoder, _ = _setup()
    spec = RubricSpec(k=3, use_prefix=False)
    save_checkpoint(tmp_path / "ck", model, encoder, spec, {"seed": 7})
    loaded, enc2, spec2, extra = load_checkpoint(tmp_path / "ck")
    assert spec2 == spec and extra == {"seed": 7} and enc2.vocab.itos == encoder.vocab.itos
    ids = torch.randint(0, 40, (1, 5))
    with torch.no_grad():
        assert torch.equal(model(ids)[0], loaded(ids)[0])


def test_missing_checkpoint_is_a_one_line_config_error(tmp_path):
    from coalign.errors import ConfigError
    with pytest.raises(ConfigError, match="missing meta.json"):
        load_checkpoint(tmp_path)


def test_greedy_criteria_are_the_argmax_of_the_teacher_forced_generation_head():
    model, encoder, env = _setup(seed=2)
    import random
    trajs = [random_rollout(env, EXAMPLE, random.Random(i)) for i in range(2)]
    rubric = RubricModel(model, encoder, RubricSpec(k=2))
    contexts = rubric.contexts(trajs)
    crits = rubric.criteria(contexts)
    out = rubric.forward(contexts, crits)
    logits = out.lm_logits.detach().clone()
    eoc = encoder.vocab.id("<eoc>")
    banned = [encoder.vocab.id(s) for s in ("<pad>", "<bos>", "<q>", "<obs>", "<act>", "<res>",
                                             "<now>", "<eoa>")]
    logits[:, banned] = float("-inf")
    picked = logits.argmax(-1)
    # Positions where the length limit forced <eoc> are exempt.
    forced = [len(t) == encoder.criterion_tokens
              for c in crits for t in c for _ in range(len(t) + 1)]
    targets = out.lm_targets.tolist()
    keep = [i for i, (tok, f) in enumerate(zip(targets, forced, strict=True))
            if not (f and tok == eoc)]
    assert picked[keep].tolist() == out.lm_targets[keep].tolist()
