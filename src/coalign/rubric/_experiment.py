"""One full ARCO experiment: shared data, warm-ups, co-evolution per variant, measurements.

Variants share the enumeration of successful episodes (SFT data). The main warm-up (policy SFT
+ the K=3 adaptive rubric model) runs once from scratch; each distinct rubric variant then
continues it for a few epochs on its own rubric targets, policy SFT loss included (``arco`` and
``outcome_reinforce`` share theirs). Because the backbone is shared, the variants' policies
start close to, not exactly at, the same point (the benchmark reports each one's EM after
warm-up). Every variant then gets the same co-evolution budget.
"""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from coalign.data import Example
from coalign.rubric._ablations import Variant
from coalign.rubric._coevolve import CoevolveConfig, co_evolve
from coalign.rubric._criteria import FIXED_CRITERIA, warmup_targets
from coalign.rubric._env import SearchEnv, Trajectory
from coalign.rubric._evaluate import credit_pairs, decomposition_mse, exact_match_rate, roc_auc
from coalign.rubric._model import ArcoModel, BackboneConfig
from coalign.rubric._policy import Policy
from coalign.rubric._rubric import RubricModel, RubricSpec
from coalign.rubric._text import StepEncoder, Vocab
from coalign.rubric._warmup import WarmupConfig, collect_sft, random_rollout, warm_up

__all__ = ["ExperimentConfig", "ExperimentResult", "build_encoder", "run_experiment"]


@dataclass(frozen=True)
class ExperimentConfig:
    """Everything that sizes one experiment."""

    seed: int = 0
    d_model: int = 64
    n_layers: int = 2
    vocab_words: int = 8000
    heldout_rollouts: int = 2  # sampled warm-up-policy episodes per held-out question
    warmup: WarmupConfig = field(default_factory=WarmupConfig)
    coevolve: CoevolveConfig = field(default_factory=CoevolveConfig)


@dataclass
class ExperimentResult:
    """Figures (JSON-ready) and the trained ARCO model, for checkpointing."""

    figures: dict[str, Any]
    arco_model: ArcoModel | None
    encoder: StepEncoder
    heldout_trajs: list[Trajectory]


def build_encoder(examples: Sequence[Example], extra_texts: Sequence[str], max_words: int
                  ) -> StepEncoder:
    """Vocabulary over the questions and paragraphs (inputs only) plus criteria texts."""
    texts = [str(e.inputs["question"]) for e in examples]
    texts += [f"{p['title']} {p['text']}" for e in examples for p in e.inputs["paragraphs"]]
    texts += ["search answer", *FIXED_CRITERIA, *extra_texts]
    return StepEncoder(Vocab.build(texts, max_words))


def _new_model(encoder: StepEncoder, config: ExperimentConfig) -> ArcoModel:
    torch.manual_seed(config.seed)
    return ArcoModel(BackboneConfig(len(encoder.vocab), config.d_model, config.n_layers))


def _scores(rubric: RubricModel, trajs: Sequence[Trajectory]) -> list[list[float]]:
    return [[r.score for r in rs] for rs in rubric.annotate(trajs)]


def run_experiment(
    env: SearchEnv, train: Sequence[Example], heldout: Sequence[Example],
    config: ExperimentConfig, variants: dict[str, Variant],
    log: Callable[[str], None] = print,
) -> ExperimentResult:
    """Train every variant on ``train``; measure on ``heldout`` (see module doc)."""
    t0 = time.perf_counter()
    rng = random.Random(config.seed)
    sft = collect_sft(env, train, rng)
    probe = sft + [random_rollout(env, e, rng) for e in train[:50]]
    crit_texts = [c for t in probe for s in warmup_targets(t, 5) for c in s.criteria]
    encoder = build_encoder([*train, *heldout], crit_texts, config.vocab_words)
    log(f"SFT episodes: {len(sft)}/{len(train)} training questions; vocab {len(encoder.vocab)};"
        f" {time.perf_counter() - t0:.1f}s")
    init = _new_model(encoder, config)
    figures: dict[str, Any] = {"em": {}, "timing_s": {}, "extra": {}}
    figures["extra"]["sft_questions"] = len(sft)
    figures["extra"]["answer_candidate_recall"] = sum(
        env.answer_recall(e) for e in heldout) / len(heldout)
    warmed: dict[RubricSpec, ArcoModel] = {}
    trained: dict[str, ArcoModel] = {}
    main_spec = variants["arco"].spec
    # The main warm-up (policy + K=3 adaptive rubric) runs once from scratch; every rubric
    # variant, the main one included, then continues it for ``adapt_epochs`` on its own
    # targets, so all variants get the same number of warm-up epochs.
    t = time.perf_counter()
    base = copy.deepcopy(init)
    stats = warm_up(Policy(base, encoder, env), RubricModel(base, encoder, main_spec), train,
                    config.warmup, sft_trajs=sft)
    figures["timing_s"]["warmup[base]"] = time.perf_counter() - t
    log(f"warm-up base: {stats} ({time.perf_counter() - t:.1f}s)")
    for name, variant in variants.items():
        if variant.spec not in warmed:
            t = time.perf_counter()
            model = copy.deepcopy(base)
            stats = warm_up(Policy(model, encoder, env), RubricModel(model, encoder, variant.spec),
                            train, config.warmup, sft_trajs=sft, adapt=True)
            warmed[variant.spec] = model
            figures["extra"].setdefault("em_after_warmup", {})[name] = exact_match_rate(
                Policy(model, encoder, env), heldout)
            figures["timing_s"][f"warmup[{name}]"] = time.perf_counter() - t
            log(f"warm-up {name}: {stats} ({time.perf_counter() - t:.1f}s)")
        model = copy.deepcopy(warmed[variant.spec])
        t = time.perf_counter()
        cfg = CoevolveConfig(**{**config.coevolve.__dict__, "reward": variant.reward})
        hist = co_evolve(Policy(model, encoder, env), RubricModel(model, encoder, variant.spec),
                         train, cfg)
        figures["timing_s"][f"coevolve[{name}]"] = time.perf_counter() - t
        trained[name] = model
        figures["em"][name] = exact_match_rate(Policy(model, encoder, env), heldout)
        log(f"{name}: EM {figures['em'][name]:.3f}; train reward first/last "
            f"{hist[0]['reward']:.2f}/{hist[-1]['reward']:.2f} ({time.perf_counter() - t:.1f}s)")
    warm_policy = Policy(warmed[main_spec], encoder, env)
    figures["em"]["warmup"] = exact_match_rate(warm_policy, heldout)
    figures["em"]["random"] = _random_em(env, heldout, config.seed)
    # Held-out episodes, sampled once from the warm-up policy, for decomposition and credit.
    gen = torch.Generator().manual_seed(config.seed + 1)
    held: list[Trajectory] = []
    for _ in range(config.heldout_rollouts):
        held += warm_policy.rollout(heldout, gen)[0]
    outcomes = [t.reward for t in held]
    figures["extra"]["heldout_trajectories"] = len(held)
    figures["extra"]["heldout_success_rate"] = sum(outcomes) / len(outcomes)

    def rubric(model: ArcoModel, spec: RubricSpec) -> RubricModel:
        return RubricModel(model, encoder, spec)

    mse = {"init": rubric(init, main_spec), "before": rubric(warmed[main_spec], main_spec)}
    if "arco" in trained:
        mse["after"] = rubric(trained["arco"], main_spec)
    for key, r in mse.items():
        figures[f"decomposition_mse_{key}"] = decomposition_mse(held, r.annotate(held))
    figures["decomposition_mse_by_variant"] = {
        name: decomposition_mse(held, rubric(trained[name], v.spec).annotate(held))
        for name, v in variants.items() if v.reward == "arco"
    }
    auc = {"outcome_only": roc_auc(*credit_pairs(held, [[t.reward] * len(t.steps)
                                                        for t in held]))}
    auc["arco"] = roc_auc(*credit_pairs(held, _scores(mse.get("after", mse["before"]), held)))
    if "arco_no_rubric" in trained:
        spec = variants["arco_no_rubric"].spec
        auc["scalar_prm"] = roc_auc(*credit_pairs(held, _scores(
            rubric(trained["arco_no_rubric"], spec), held)))
    auc["arco_warmup"] = roc_auc(*credit_pairs(held, _scores(mse["before"], held)))
    figures["credit_auc"] = auc
    figures["timing_s"]["total"] = time.perf_counter() - t0
    return ExperimentResult(figures, trained.get("arco"), encoder, held)


def _random_em(env: SearchEnv, examples: Sequence[Example], seed: int) -> float:
    rng = random.Random(seed)
    return sum(random_rollout(env, e, rng).reward for e in examples) / len(examples)
