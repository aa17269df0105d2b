"""Deterministic toy runs of the optimization loop and their decisions (issue 22).

``fingerprints(tmp)`` runs each case and returns, per case, the step list the ledger holds:
(step, component, param, accepted, value, reason, reset, val_after). The fixture
``tests/fixtures/loop_fingerprints.json`` was written by the loop before its redesign
(``python -m tests.loop_fingerprint``, at commit e6caf27); ``test_loop_fingerprint`` checks the
loop still makes the same decisions (the ``replay_*`` entries were written by the old
``coalign.optimize`` package run over the same tree as the new one). Regenerate it only for a
change meant to alter a decision, and name that change where it is committed.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).parent / "fixtures" / "loop_fingerprints.json"


def decisions(opt: Any) -> list[list[Any]]:
    return [[t, r["component"], r["param"], st == "accepted", r["value"], r["reason"],
             list(r.get("reset", [])),
             None if r["val_after"] is None else round(r["val_after"], 9)]
            for t, st, r in opt.store.steps()]


def _toy(tmp: Path, seed: int, iterations: int = 8, text: str | None = None) -> Any:
    from tests.test_optimize_loop import make_optimizer, writer_lm

    opt = make_optimizer(tmp, writer_lm(), iterations=iterations)
    opt.s.seed = seed
    if text == "pareto":
        from coalign.optimize import ParetoTextOptimizer

        opt.optimizers["text"] = ParetoTextOptimizer(budget=6, beam_width=3, max_rounds=2)
    opt.run()
    return opt


def _never_accept(tmp: Path) -> Any:
    from tests.test_optimize_loop import NeverAccept, make_optimizer, writer_lm

    lm = writer_lm()
    opt = make_optimizer(tmp, lm, iterations=4)
    opt.s.gate = NeverAccept()
    opt.run()
    opt.store.close()
    resumed = make_optimizer(tmp, lm, iterations=10)  # rejections rebuilt from the ledger
    resumed.s.gate = NeverAccept()
    resumed.run()
    return resumed


def _killed_and_resumed(tmp: Path) -> Any:
    from tests.test_optimize_loop import make_optimizer, writer_lm

    lm = writer_lm()
    opt = make_optimizer(tmp, lm, iterations=3)
    opt.run()
    opt.store.close()
    resumed = make_optimizer(tmp, lm, iterations=8)
    resumed.run()
    return resumed


def _coupled(tmp: Path, scope: str, answers: dict[str, float]) -> Any:
    from coalign.data import Example
    from coalign.lm import CachedLM
    from coalign.optimize import LoopSettings, Optimizer
    from coalign.rewards import HashingBackbone
    from coalign.runtime import Runtime
    from coalign.store import RunStore
    from coalign.task import Task
    from tests.fakes import FakeLM
    from tests.test_coupled import TUNED, Scripted, cheap, strong, system

    task = Task(system(scope), lambda pred, ex: {"best": 1.0, "ok": 0.5}.get(pred, 0.0), "acc")
    lms = {"cheap": CachedLM(FakeLM(cheap), tmp / "c.sqlite"),
           "strong": CachedLM(FakeLM(strong), tmp / "s.sqlite")}
    reward = Scripted(HashingBackbone(64), {"gen": "answers"})
    reward.answers = answers
    train = [Example(f"t{i}", {"q": f"train {i}"}, None) for i in range(6)]
    val = [Example(f"v{i}", {"q": f"val {i}"}, None) for i in range(4)]
    opt = Optimizer(task, train, val, Runtime(lms=lms), RunStore(tmp / "run"), reward,
                    LoopSettings(proposals="local", iterations=12, search_size=3, fresh_inputs=2,
                                 rollout_n=2, terminal_reward="learned"))  # the scripted head
    opt.config = opt.config.with_value("gen", "prompt", TUNED)  # an earlier accepted prompt
    opt.run()
    return opt


def _selector(tmp: Path) -> Any:
    from tests.selector_toy import selector_loop

    opt = selector_loop(tmp, iterations=4)
    opt.run()
    return opt


def _early(tmp: Path) -> Any:
    from tests.test_early_reject import optimizer

    opt = optimizer(tmp, iterations=5)
    opt.run()
    return opt


def _replay(tmp: Path, seed: int) -> Any:
    """The loop through ``Job`` on a small replay table (``lm: replay:DIR``), no LLM."""
    from coalign.job import Job, parse_run_config
    from tests.test_table_compare import short_answer_table

    table = short_answer_table(tmp / "table", 12)
    cfg = parse_run_config({"system": table.space.system, "data": table.space.dataset,
                            "lm": f"replay:{tmp / 'table'}", "seed": seed, "backbone": "hashing",
                            "split": {"train": 4, "val": 4, "test": 4, "seed": seed},
                            "budget": {"iterations": 8, "rollout_n": 0, "search_size": 2,
                                       "fresh_inputs": 2, "proposals": "local"}},
                           "replay fingerprint")
    job = Job.open(cfg, tmp / "run")
    job.optimizer.run()
    return job.optimizer


MISALIGNED = {"best": 0.0, "ok": 0.5, "wrong": 1.0}
ALIGNED = {"best": 1.0, "ok": 0.5, "wrong": 0.0}
CASES: dict[str, Callable[[Path], Any]] = {
    "toy_seed1": lambda d: _toy(d, 1),
    "toy_seed2": lambda d: _toy(d, 2),
    "toy_seed3": lambda d: _toy(d, 3, iterations=10),
    "toy_pareto": lambda d: _toy(d, 1, iterations=6, text="pareto"),
    "never_accept_resumed": _never_accept,
    "killed_and_resumed": _killed_and_resumed,
    "coupled_global_aligned": lambda d: _coupled(d, "global", ALIGNED),
    "coupled_global_misaligned": lambda d: _coupled(d, "global", MISALIGNED),
    "coupled_per_instance_aligned": lambda d: _coupled(d, "per_instance", ALIGNED),
    "coupled_per_instance_misaligned": lambda d: _coupled(d, "per_instance", MISALIGNED),
    "selector": _selector,
    "early_reject": _early,
    "replay_seed0": lambda d: _replay(d, 0),
    "replay_seed1": lambda d: _replay(d, 1),
}


def fingerprints(tmp: Path, names: list[str] | None = None) -> dict[str, list[list[Any]]]:
    out = {}
    for name in names or list(CASES):
        opt = CASES[name](tmp / name)
        out[name] = json.loads(json.dumps(decisions(opt)))
        opt.store.close()
    return out


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        FIXTURE.write_text(json.dumps(fingerprints(Path(folder)), indent=1) + "\n")
    sys.stdout.write(f"wrote {FIXTURE}\n")
