"""A run store populated the way the optimization loop writes one, for the report tests.

The system is real (two function components with a Text and a Choice param), so config digests
and trace keys are the ones ``SystemConfig`` computes, not re-derived by the code under test.
"""

from __future__ import annotations

from pathlib import Path

from coalign.component import FunctionComponent
from coalign.config import SystemConfig
from coalign.params import Choice, Text, TextValue
from coalign.store import RunStore
from coalign.system import System
from coalign.trace import Step, Trace, Usage

INJECT = '<script>alert(1)</script> say "quotes" & ampersands'
DEMO = {"question": "<img src=x onerror=alert(2)>", "answer": "a & b"}
ANSWER_INJECT = "</td><script>alert(3)</script>"
LEDGER = {"runs": {"validation": 93.33, "local_search": 10.0, "lrf_train": 120.0, "adapt": 100.0},
          "llm_calls": {"lrf_train": 360, "adapt": 300, "validation": 140, "local_search": 30},
          "cache_hits": {"lrf_train": 40, "validation": 12},  # none recorded for the others
          "total_runs": 323.33}


def make_system() -> System:
    answer = FunctionComponent("answer", lambda x, c, ctx: {"a": x["q"]}, ["q"], ["a"],
                               params={"prompt": Text("Answer briefly.")})
    route = FunctionComponent("route", lambda x, c, ctx: {"out": x["a"]}, ["a"], ["out"],
                              params={"model": Choice(["qwen", "smollm"])})
    return System("toy_qa", [answer, route], inputs=["q"], output="out")


def _trace(example_id: str, key: str, answer: str, reward: float) -> Trace:
    steps = [Step("answer", 0, {"q": f"question {example_id}"}, {"a": answer}),
             Step("route", 0, {"a": answer}, {"out": answer})]
    return Trace(example_id, key, {"q": f"question {example_id}"}, steps, {"out": answer}, reward)


CANDIDATE_INJECT = "Answer <b onclick=alert(3)>tersely</b>."


def populate(run_dir: Path, *, meta: bool = True, traces: bool = True) -> dict[str, str]:
    """Four steps (accept, reject, accept per-instance, no change); returns the trace keys."""
    system = make_system()
    c0 = system.default_config()
    c1 = c0.with_value("answer", "prompt", TextValue(INJECT, (DEMO,)))
    prompt = c1["answer"]["prompt"].to_json()
    policy = [["route", "model"]]
    selector = "5e1" * 21 + "c"  # digest of the route.model selector's frozen reward

    def rec(component, param, value, reason, before, after, config, policies):
        return {"component": component, "param": param, "value": value, "reason": reason,
                "val_before": before, "val_after": after, "seconds": 1.5,
                "config": config.to_json(), "policies": policies, "lrf_checkpoint": "lrf/x",
                "selectors": {f"{c}.{p}": selector for c, p in policies},
                "account": {}, "ledger": LEDGER}

    keys = {"initial": c0.digest, "step0": c1.digest,
            "step2": c1.digest + f"|route.model@{selector[:12]}"}
    with RunStore(run_dir) as store:
        store.put_step(0, "accepted", rec("answer", "prompt", prompt, "validation improved",
                                          0.40, 0.50, c1, []))
        store.put_step(1, "rejected", rec("route", "model", "smollm",
                                          "validation did not improve", 0.50, 0.45, c1, []))
        store.put_step(2, "accepted", rec("route", "model", "lrf-selector",
                                          "validation improved", 0.50, 0.55, c1, policy))
        nochange = rec("answer", "prompt", prompt, "no change proposed", 0.55, None, c1, policy)
        nochange["candidates"] = [{"value": prompt, "local_reward": 0.71},
                                  {"value": CANDIDATE_INJECT, "local_reward": 0.42},
                                  {"value": "malformed: no score"}]
        store.put_step(3, "rejected", nochange)
        if meta:
            store.set_meta("system", system.name)
            store.set_meta("run_config", {"system": "toy_qa", "note": INJECT})
            store.set_meta("lrf_alignment", {"answer": {"pairs": 40, "accuracy": 0.725,
                                                        "inputs": 9, "input_accuracy": 0.61},
                                             "route": {"pairs": 12, "accuracy": None}})
            store.set_meta("result", {"before": 0.38, "after": 0.47, "metric": "f1",
                                      "test_size": 200})
        if traces:
            for name, key in keys.items():
                for i in range(4):
                    text = ANSWER_INJECT if (name, i) == ("step2", 0) else f"{name}-answer-{i}"
                    store.put_trace("val", _trace(f"e{i}", key, text, 0.5))
    return keys


# HTML-special text in the names the charts draw: component, option and metric names.
NAME_INJECT = '<b>re&rank</b> "q"'
OPTION_INJECT = "<i>big</i> & 'fast'"
METRIC_INJECT = "f1 <u>&</u>"
TEST_SIZE = 4
VAL_REWARDS = {"initial": [0.2, 0.4, 0.6, 0.4], "step0": [0.5, 0.5, 0.5, 0.5],
               "step2": [0.6, 0.5, 0.6, 0.5]}
VAL_SECONDS = {"initial": 1.0, "step0": 2.0, "step2": 1.5}


def _account(runs: dict[str, float]) -> dict:
    """A cost account whose phases cost ``runs`` equivalent runs, split 3:1 between the two
    components (each execution of one of two components is half a run)."""
    return {"components": ["answer", "route"],
            "executed": {ph: {"answer": round(r * 1.5), "route": round(r * 0.5)}
                         for ph, r in runs.items()},
            "usage": {ph: {"answer": {"calls": int(r)}} for ph, r in runs.items()}}


def _routed(example_id: str, key: str, option: str, reward: float) -> Trace:
    trace = _trace(example_id, key, f"routed to {option}", reward)
    trace.steps[1].choices = {"model": option}
    trace.steps[1].usage = Usage(calls=1, prompt_tokens=90 if option == "qwen" else 30,
                                 completion_tokens=10)
    trace.steps[1].latency_s = 1.2 if option == "qwen" else 0.3
    return trace


def populate_charts(run_dir: Path) -> dict[str, str]:
    """``populate`` plus what every chart of the report draws from: a cost ledger and account
    per step, a stage-1 account, whole test evaluations of the unoptimized system and of each
    accepted step (``Job.steps_on_test``), per-instance choices in the final system's traces,
    and HTML-special text in drawn names."""
    keys = populate(run_dir)
    phases = [{"lrf_train": 120.0},
              {"lrf_train": 120.0, "validation": 32.0, "adapt": 20.0},
              {"lrf_train": 120.0, "validation": 48.0, "adapt": 20.0},
              {"lrf_train": 120.0, "validation": 64.0, "adapt": 40.0, NAME_INJECT: 8.0},
              {"lrf_train": 120.0, "validation": 64.0, "adapt": 40.0, NAME_INJECT: 16.0}]
    with RunStore(run_dir, create=False) as store:
        for (t, state, rec), runs in zip(store.steps(), phases[1:], strict=True):
            rec["ledger"] = {"runs": runs, "llm_calls": {p: int(r) for p, r in runs.items()},
                             "cache_hits": {p: 1 for p in runs}}
            rec["account"] = _account(runs)
            store.put_step(t, state, rec)
        store.set_meta("stage1_account", _account(phases[0]))
        store.set_meta("result", {"before": 0.25, "after": 0.75, "metric": METRIC_INJECT,
                                  "test_size": TEST_SIZE})
        alignment = store.get_meta("lrf_alignment")
        alignment[NAME_INJECT] = {"pairs": 7, "accuracy": 0.43, "inputs": 3,
                                  "input_accuracy": 0.5}
        store.set_meta("lrf_alignment", alignment)
        # validation as the gate saw it: per-input rewards and model seconds per config
        # (start 0.40 at 1 s, step 0 0.50 at 2 s, step 2 0.55 at 1.5 s: step 0 is dominated)
        for t in store.traces("val"):
            name = next(n for n, k in keys.items() if k == t.config_digest)
            i = int(t.example_id[1:])
            t.reward = VAL_REWARDS[name][i]
            t.steps[0].usage.model_s = VAL_SECONDS[name]
            store.put_trace("val", t)
        suffix = keys["step2"][len(keys["step0"]):]
        system = make_system()  # runner.evaluate saves each config it evaluates on test
        c0 = system.default_config()
        c1 = SystemConfig.from_json(system, store.steps()[0][2]["config"])
        for config in (c0, c1):
            store.save_config(config.digest, config.to_json())
        for i in range(TEST_SIZE):
            store.put_trace("test", _trace(f"t{i}", keys["initial"], "a", 0.25))
            store.put_trace("test", _trace(f"t{i}", keys["step0"], "b", 0.5 + 0.25 * (i == 0)))
            option = OPTION_INJECT if i == 0 else "qwen" if i < 3 else "smollm"
            store.put_trace("test" + suffix, _routed(f"t{i}", keys["step0"], option, 0.75))
    return keys
