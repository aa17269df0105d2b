"""Headroom probe for HotpotQA candidates, on questions outside every table's pool.

Scores a few global configs of ``multihop_qa`` (upstream variants x answer-step candidates)
live on HotpotQA questions 200..239 of ``hotpotqa_dev_unified.jsonl``: after the tables' pool
(the first 200) and before the bootstrap set (the last 48), so no pool question shapes what the
probe finds. It chose the wide space's new answer candidate (labelled demos);
``table_space.py multihop_qa_wide`` builds that candidate the same way.

    COALIGN_LM_THREADS=2 python -m benchmarks.hotpotqa_probe \
        --json benchmarks/results/replay/probe-hotpotqa.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from benchmarks._results import add_json_option, write_result
from benchmarks.table_space import LABELLED, labelled_demos
from coalign.backends import build_runtime
from coalign.params import TextValue
from coalign.runner import load_dataset
from coalign.systems import multihop_qa

BASE = Path("benchmarks/tables/multihop_qa/space.json")
STRICT = ("Reply with only the answer itself: a name, a number, a date, or yes or no. "
          "Never write a sentence.")
QUOTE = ("Copy from the passages the one or two sentences that answer the question. "
         "Reply with only the copied sentences.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path("runs/probe/lm_cache.sqlite"))
    add_json_option(parser)
    args = parser.parse_args()
    examples = load_dataset("hotpotqa")
    probe, outside = examples[200:240], examples[-48:]
    task = multihop_qa("qwen2.5-0.5b", ks=(3, 5), query_sources=("query", "question"),
                       layout="inputs_first")
    runtime, _ = build_runtime(["qwen2.5-0.5b"], args.cache, max_workers=1)
    system, base = task.system, task.system.default_config()
    space = json.loads(BASE.read_text())["params"]
    labelled = labelled_demos(task, outside[:LABELLED], runtime)
    start_answer = space["answer_generator.prompt"][0]
    answers = {
        "start": start_answer,
        "bootstrapped demos": space["answer_generator.prompt"][3],
        "strict format": {"instruction": STRICT, "demos": []},
        "labelled demos": {"instruction": start_answer["instruction"], "demos": labelled},
        "strict + labelled": {"instruction": STRICT, "demos": labelled},
    }
    upstreams = {
        "start": {},
        "question, extractor 2": {("retriever", "query"): "question",
                                  ("info_extractor", "prompt"):
                                      space["info_extractor.prompt"][2]},
        "question, k 5": {("retriever", "query"): "question", ("retriever", "k"): 5},
        "question, quote": {("retriever", "query"): "question",
                            ("info_extractor", "prompt"): {"instruction": QUOTE, "demos": []}},
    }
    rows = []
    for up_name, up in upstreams.items():
        for ans_name, ans in answers.items():
            config = base
            for (comp, param), value in up.items():
                config = config.with_value(comp, param, TextValue.from_json(value)
                                           if param == "prompt" else value)
            config = config.with_value("answer_generator", "prompt", TextValue.from_json(ans))
            t0 = time.perf_counter()
            scores = [task.score(system.run(e.id, e.inputs, config, runtime), e).reward
                      for e in probe]
            rows.append({"upstream": up_name, "answer": ans_name,
                         "f1": sum(scores) / len(scores), "scores": scores})
            print(f"{up_name:24s} {ans_name:20s} {rows[-1]['f1']:.3f}  "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)
    if args.json:
        write_result(args.json, {"questions": [e.id for e in probe],
                                 "labelled_demos": labelled, "rows": rows}, indent=1)


if __name__ == "__main__":
    main()
