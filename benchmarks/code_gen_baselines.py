"""code_gen on MBPP: the unoptimized system against the generator alone (the single-LLM
baseline), on the replay table's finished problems (no LLM call).

Both come from the same traces: the start config's full path gives the system's pass@1, and
its code generator's output, scored by the same hidden tests in the same sandbox, gives the
single LLM's. Prints both with 95% bootstrap intervals and their paired difference; also how
often the reviser ran (the executor reported a failure) and changed the code.

    python -m benchmarks.code_gen_baselines benchmarks/tables/code_gen \
        --json benchmarks/results/replay/code_gen-baselines.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks._results import add_json_option, write_result
from coalign.runner import evaluate
from coalign.stats import paired_bootstrap
from coalign.tables import Table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", type=Path)
    add_json_option(ap)
    args = ap.parse_args()
    table = Table(args.table)
    task = table.space.task()
    problems = table.finished()
    res = evaluate(task, problems, task.system.default_config(),
                   table.runtime(max_workers=1))
    system = res.scores
    alone = [task.metric(t.step("code_generator").outputs["code"], e)
             for t, e in zip(res.traces, problems, strict=True)]
    revised = [t.step("code_generator").outputs["code"] != t.state["final_code"]
               for t in res.traces]
    ran = [bool(t.step("executor").outputs["feedback"]) for t in res.traces]
    rows = {}
    for name, scores in (("generator alone (single LLM)", alone),
                         ("code_gen unoptimized", system)):
        mean, lo, hi, _ = paired_bootstrap(scores, [0.0] * len(scores))
        rows[name] = {"pass@1": mean, "ci95": [lo, hi]}
        print(f"{name:<30} {mean:.3f} [{lo:.3f}, {hi:.3f}]")
    d = paired_bootstrap(system, alone)
    print(f"system - generator alone: {d[0]:+.3f} [{d[1]:+.3f}, {d[2]:+.3f}] on {len(problems)} "
          f"problems; reviser ran on {sum(ran)}, changed the code on {sum(revised)}")
    if args.json:
        write_result(args.json, {
            "table": str(args.table), "space": table.space.digest, "problems": len(problems),
            "rows": rows, "paired": {"mean": d[0], "ci95": [d[1], d[2]], "p_better": d[3]},
            "reviser_ran": sum(ran), "reviser_changed": sum(revised)})


if __name__ == "__main__":
    main()
