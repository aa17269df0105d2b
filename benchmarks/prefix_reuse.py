"""Chunk-aligned prefix reuse against a fresh KV cache per call, side by side.

The call pattern is a stage-1 rollout of one component: for each input (a HotpotQA question with
its passages, ~400-600 prompt tokens), 4 candidate instructions placed after the inputs (layout
``inputs_first``), each answered greedily and then sampled ``--samples`` times. Both arms make
the same calls on the same loaded model; the arms alternate per input, so machine load hits
both alike. Every output of one arm must equal the other's (reuse is exact, see
``coalign.lm._prefill``); the script fails if one differs.

    COALIGN_LM_THREADS=1 python -m benchmarks.prefix_reuse --inputs 6 \
        --json benchmarks/results/prefix_reuse.json
"""

from __future__ import annotations

import argparse
import time

from benchmarks._results import add_json_option, write_result
from coalign.data import load_hotpotqa
from coalign.lm import PREFILL_CHUNK, LlamaCpp, LMRequest, Message, ModelPool

INSTRUCTIONS = (
    "Answer the question using the passages. Reply with the answer only.",
    "Answer in as few words as possible.",
    "Read the passages, find the two facts the question needs, then give a short answer.",
    "Give the answer as a name, a date or a number, nothing else.",
)


def requests_for(question: str, passages: str, samples: int) -> list[LMRequest]:
    out = []
    for instruction in INSTRUCTIONS:
        messages = (Message("user", f"Passages:\n{passages}\n\nQuestion: {question}\n\n"
                                    f"{instruction}"),)
        out.append(LMRequest(messages=messages, max_tokens=24))
        out += [LMRequest(messages=messages, max_tokens=24, temperature=1.0, sample_index=i)
                for i in range(samples)]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=6)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--model", default="qwen2.5-0.5b")
    add_json_option(parser)
    args = parser.parse_args()
    pool = ModelPool()
    arms = {"fresh": LlamaCpp(args.model, pool=pool, reuse_prefix=False),
            "reuse": LlamaCpp(args.model, pool=pool, reuse_prefix=True)}
    arms["fresh"].load()
    seconds = {name: 0.0 for name in arms}
    prompt_tokens, calls = 0, 0
    for i, ex in enumerate(load_hotpotqa(limit=args.inputs)):
        passages = "\n".join(f"{p['title']}: {p['text']}" for p in ex.inputs["paragraphs"][:4])
        batch = requests_for(ex.inputs["question"], passages, args.samples)
        order = list(arms) if i % 2 == 0 else list(reversed(arms))
        texts = {}
        for name in order:
            t0 = time.perf_counter()
            responses = [arms[name].generate(r) for r in batch]
            seconds[name] += time.perf_counter() - t0
            texts[name] = [r.text for r in responses]
        if texts["fresh"] != texts["reuse"]:
            diff = next(j for j, (a, b) in enumerate(zip(texts["fresh"], texts["reuse"],
                                                         strict=True)) if a != b)
            raise SystemExit(f"input {ex.id}: call {diff} answered differently with reuse")
        prompt_tokens += sum(r.prompt_tokens for r in responses)
        calls += len(batch)
        print(f"{ex.id}: {len(batch)} calls, fresh {seconds['fresh']:.1f} s, "
              f"reuse {seconds['reuse']:.1f} s so far", flush=True)
    speedup = seconds["fresh"] / seconds["reuse"]
    print("\n| arm | seconds | s per call |\n|---|---|---|")
    for name, s in seconds.items():
        print(f"| {name} | {s:.1f} | {s / calls:.2f} |")
    print(f"{calls} calls per arm, {prompt_tokens / calls:.0f} prompt tokens per call; every "
          f"output identical; speed-up {speedup:.2f}x")
    if args.json:
        write_result(args.json, {
            "model": args.model, "inputs": args.inputs, "samples": args.samples,
            "instructions": len(INSTRUCTIONS), "calls_per_arm": calls,
            "prompt_tokens_per_call": prompt_tokens / calls, "chunk": PREFILL_CHUNK,
            "seconds": seconds, "speedup": speedup, "outputs_identical": True})


if __name__ == "__main__":
    main()
