"""Load time and speed of the bundled models on a ~200-token prompt.

For each model: checksum time (sha256 of the GGUF, only for pinned models), load time, prefill
speed (a call with max_tokens=1) and decode speed (a call generating up to N tokens, minus its
estimated prefill). Each measurement uses a prompt with a fresh first word, so llama.cpp cannot
reuse a cached prefix beyond the chat template's fixed opening.

    python -m benchmarks.lm_speed [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

from benchmarks._results import add_json_option, write_result
from coalign.lm import LlamaCpp, ModelPool, ModelResolver, chat

MODELS = ("smollm2-135m", "qwen2.5-0.5b", "qwen2.5-1.5b")
PASSAGE = (
    "The lighthouse on the northern cape was built in 1871 from granite quarried two miles "
    "inland. Its keeper, a former ship's carpenter, kept a log of every vessel that passed, "
    "noting the weather, the wind and the colour of the sea. In the winter of 1889 a storm "
    "destroyed the lower gallery, and the lamp was dark for eleven nights while the village "
    "rebuilt the stair. The log from those weeks survives in the county archive; it records "
    "forty-two ships, three of which ran aground on the shoals south of the cape. A new lens, "
    "made in Paris, was installed in 1903 and could be seen from thirty kilometres away. "
    "Electric light replaced the oil lamp in 1931, and the last keeper left in 1974 when the "
    "station was automated. Today the tower is a museum, and the keeper's cottage rents to "
    "visitors who want to watch the shipping lanes at night."
)
QUESTION = "Retell the passage above in your own words, in detail."


def measure(model: str, decode_tokens: int, reps: int, threads: int | None) -> dict:
    resolver = ModelResolver()
    t0 = time.perf_counter()
    resolved = resolver.resolve(model)  # may assemble the chunked model on a first run
    t1 = time.perf_counter()
    resolver.verify(resolved)
    t2 = time.perf_counter()
    pool = ModelPool(resolver, n_threads=threads)
    lm = LlamaCpp(model, n_ctx=1024, pool=pool)
    loaded = lm.load()
    prefill, decode, prompt_tokens, completions = [], [], 0, []
    for rep in range(reps):
        nonce = f"Run {model} {rep}."
        first = lm.generate(chat(f"{nonce} {PASSAGE}\n\n{QUESTION}", max_tokens=1))
        prompt_tokens = first.prompt_tokens
        prefill.append(first.prompt_tokens / first.latency_s)
        nonce = f"Trial {model} {rep}."
        out = lm.generate(chat(f"{nonce} {PASSAGE}\n\n{QUESTION}", max_tokens=decode_tokens))
        decode_s = out.latency_s - out.prompt_tokens / prefill[-1]
        decode.append((out.completion_tokens - 1) / decode_s if out.completion_tokens > 1 else 0.0)
        completions.append(out.completion_tokens)
    pool.clear()
    return {
        "model": model,
        "file": str(resolved.path),
        "file_mb": round(resolved.path.stat().st_size / 1e6, 1),
        "resolve_s": round(t1 - t0, 3),
        "sha256_s": round(t2 - t1, 3) if resolved.sha256 else None,
        "load_s": round(loaded.load_s, 3),
        "n_threads": loaded.n_threads,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completions,
        "prefill_tok_s": round(statistics.median(prefill), 1),
        "decode_tok_s": round(statistics.median(decode), 1),
        "reps": reps,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 repetition, 32 decoded tokens")
    add_json_option(parser)
    parser.add_argument("--threads", type=int, help="llama.cpp threads (default: automatic)")
    parser.add_argument("--models", nargs="+", default=list(MODELS), help="models to measure")
    args = parser.parse_args()
    reps, decode_tokens = (1, 32) if args.quick else (3, 96)
    load_start = round(os.getloadavg()[0], 2)  # the machine may be shared: record how busy
    rows = [measure(m, decode_tokens, reps, args.threads) for m in args.models]
    env = {
        "cpu_count": os.cpu_count(),
        "load_avg_1m_at_start": load_start,
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "quick": args.quick,
        "threads_arg": args.threads,
    }
    header = f"{'model':<14}{'MB':>7}{'sha256 s':>10}{'load s':>8}{'prompt':>8}"
    header += f"{'threads':>8}{'prefill tok/s':>15}{'decode tok/s':>14}"
    print(header)
    for r in rows:
        sha = f"{r['sha256_s']:.2f}" if r["sha256_s"] is not None else "-"
        print(
            f"{r['model']:<14}{r['file_mb']:>7}{sha:>10}{r['load_s']:>8.2f}"
            f"{r['prompt_tokens']:>8}{r['n_threads']:>8}{r['prefill_tok_s']:>15}"
            f"{r['decode_tok_s']:>14}"
        )
    print(
        f"({env['cpu_count']} cores, 1-min load average {load_start} at start, "
        f"{env['load_avg_1m']} at end; {reps} rep(s), median)"
    )
    if args.json:
        write_result(args.json, {"env": env, "results": rows})


if __name__ == "__main__":
    main()
