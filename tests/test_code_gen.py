"""``code_gen``: reply parsing, the executor's keep choice, the reviser's pass-through and pass@1
(pipeline logic with a scripted LM; the sandbox is real)."""

from __future__ import annotations

from coalign.data import Example
from coalign.runtime import Runtime
from coalign.systems import code_gen
from coalign.systems._code import extract_asserts, extract_code
from tests.fakes import FakeLM

GOOD = "def add(a, b):\n    return a + b"
BAD = "def add(a, b):\n    return a - b"
EXAMPLE = Example("t1", {"task": "Add two numbers.", "example_test": "assert add(1, 2) == 3"},
                  ["assert add(1, 2) == 3", "assert add(0, 0) == 0", "assert add(2, 2) == 4"],
                  {"test_setup": ""})


def test_extract_code():
    assert extract_code(f"Here:\n```python\n{GOOD}\n```\nIt adds.") == GOOD
    assert extract_code(f"```\n{GOOD}\n```") == GOOD
    assert extract_code(f"```python\n{GOOD}") == GOOD  # cut off at max_tokens
    assert extract_code(GOOD) == GOOD
    # the first block wins, not a later usage example
    assert extract_code(f"```python\n{GOOD}\n```\n```python\nprint(add(1, 2))\n```") == GOOD


def test_extract_asserts():
    text = ("Tests:\nassert add(1, 1) == 2\n  assert add(1, 1) == 2\nprint(1)\n"
            "assert add(0, 5) == 5\n")
    assert extract_asserts(text) == ("assert add(1, 1) == 2", "assert add(0, 5) == 5")
    assert len(extract_asserts("\n".join(f"assert f({i}) == {i}" for i in range(9)))) == 5
    assert extract_asserts("assert f(1) == 1\nassert f(") == ("assert f(1) == 1",)  # cut off


def script(code: str, tests: str, revised: str):
    """Replies by which component asks (told apart by their instructions)."""
    def handler(request):
        text = request.messages[0].content + request.messages[-1].content
        if "corrected version" in text:
            return f"```python\n{revised}\n```"
        if "assert statements" in text:
            return tests
        return f"```python\n{code}\n```"
    return handler


def run(handler, keep: int = 3, sees_code: bool = True):
    task = code_gen("fake")
    lm = FakeLM(handler, "fake")
    config = (task.system.default_config().with_value("executor", "keep", keep)
              .with_value("reviser", "sees_code", sees_code))
    trace = task.score(task.system.run(EXAMPLE.id, EXAMPLE.inputs, config,
                                       Runtime(lms={"fake": lm})), EXAMPLE)
    return trace, lm


def test_passing_code_skips_the_reviser():
    trace, lm = run(script(GOOD, "assert add(2, 3) == 5", "def nope(): pass"))
    assert trace.state["feedback"] == "" and trace.state["final_code"] == GOOD
    assert trace.reward == 1.0 and lm.calls == 2  # generator + test generator only


def test_failing_code_is_revised_from_the_feedback():
    trace, lm = run(script(BAD, "assert add(2, 3) == 5", GOOD))
    assert "FAILED assert add(1, 2) == 3" in trace.state["feedback"]
    assert trace.state["final_code"] == GOOD and trace.reward == 1.0 and lm.calls == 3


def test_keep_decides_whether_wrong_generated_tests_count():
    wrong = "assert add(2, 3) == 6"  # a generated assert with a wrong expected value
    trace, lm = run(script(GOOD, wrong, BAD), keep=1)
    assert "add(2, 3) == 6" in trace.state["feedback"]
    assert trace.reward == 0.0  # the reviser broke working code to fit a wrong test
    trace, _ = run(script(GOOD, wrong, BAD), keep=0)
    assert trace.state["feedback"] == "" and trace.reward == 1.0


def test_pass_at_1_needs_every_hidden_test():
    task = code_gen("fake")
    half = "def add(a, b):\n    return 3 if a == 1 else a + b + 1"
    assert task.metric(GOOD, EXAMPLE) == 1.0
    assert task.metric(half, EXAMPLE) == 0.0
    assert task.metric("", EXAMPLE) == 0.0 and task.metric(None, EXAMPLE) == 0.0


def test_feedback_masks_addresses():
    code = "class Box:\n    pass\ndef add(a, b):\n    return Box()"
    trace, _ = run(script(code, "", GOOD), keep=0)
    assert "0x…" in trace.state["feedback"] and "0x7" not in trace.state["feedback"]


def test_the_reviser_may_be_kept_from_seeing_the_failed_code():
    prompts = []

    def handler(request):
        prompts.append(request.messages[-1].content)
        return script(BAD, "", GOOD)(request)

    trace, _ = run(handler, sees_code=False)
    assert trace.reward == 1.0 and "Code:" not in prompts[-1] and "Feedback:" in prompts[-1]
    run(handler, sees_code=True)
    assert "Code: def add(a, b):" in prompts[-1]


def test_a_repeated_example_test_runs_once():
    trace, _ = run(script(BAD, "assert add(1, 2) == 3\nassert add(0, 0) == 0", GOOD))
    assert trace.state["feedback"].startswith("1/2 tests passed.")  # not 3 tests


def test_the_generator_alone_sends_code_gens_generator_request_and_scores_its_code():
    from coalign.systems import code_gen_single

    seen: list = []

    def handler(request):
        seen.append(request.messages)
        return script(BAD, "assert add(2, 3) == 5", GOOD)(request)

    run(handler)  # the full system: generator, test generator, reviser
    single = code_gen_single("fake", models=["fake", "other"])
    lm = FakeLM(handler, "fake")
    trace = single.score(single.system.run(EXAMPLE.id, EXAMPLE.inputs,
                                           single.system.default_config(),
                                           Runtime(lms={"fake": lm})), EXAMPLE)
    assert lm.calls == 1 and seen[-1] == seen[0]  # the same request: one cache serves both
    assert trace.reward == 0.0 and trace.state["code"] == BAD  # no reviser to fix it
    assert single.system.component("code_generator").params["model"].options == ("fake", "other")
