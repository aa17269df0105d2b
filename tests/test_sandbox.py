"""coalign.sandbox: normal runs, then hostile code that must stay contained.

Hostile cases that would hurt this machine without namespaces (killing the test process, fork
bombs as root) run only when the sandbox reports ``isolation == "namespaces"``; otherwise the
test checks that the loud fallback warning was given instead.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest

from coalign.errors import ConfigError
from coalign.sandbox import (
    Limits,
    SandboxResult,
    SandboxWarning,
    TestOutcome,
    _isolate,
    _run,
    run_tests,
)

FAST = Limits(wall_seconds=3, cpu_seconds=2, test_seconds=1, memory_mb=512)
BOOT_MARKER = "exec(marshal.load(sys.stdin.buffer))"

ADD = "def add(a, b):\n    return a + b\n"
ADD_TESTS = ["assert add(1, 2) == 3", "assert add(-1, 1) == 0", "assert add(2, 2) == 4"]


@pytest.fixture(scope="module")
def isolation() -> str:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run_tests("", ["assert True"])
    if result.isolation != "namespaces":
        assert any(issubclass(w.category, SandboxWarning) for w in caught)
    return result.isolation


def hostile_allowed(isolation: str) -> bool:
    """Whether code that would harm an unprotected machine may run; if not, the warning fired."""
    if isolation == "namespaces":
        return True
    _isolate.warn_unisolated.cache_clear()
    with pytest.warns(SandboxWarning):
        run_tests("", ["assert True"])
    return False


def sandbox_processes() -> list[psutil.Process]:
    """Sandbox processes of this test process, or orphaned; not those of another test run."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if BOOT_MARKER in " ".join(proc.info["cmdline"] or []) and _ours_or_orphaned(proc):
            found.append(proc)
    return found


def _ours_or_orphaned(proc: psutil.Process) -> bool:
    try:
        for parent in proc.parents():  # the first ancestor that is no sandbox process decides
            if BOOT_MARKER not in " ".join(parent.cmdline()):
                return parent.pid in (os.getpid(), 1)
    except psutil.Error:
        pass
    return True


_EARLIER: set[int] = set()  # children of this process before the current test


@pytest.fixture(autouse=True)
def _earlier_children() -> None:
    # other tests of the suite may leave long-lived helpers (multiprocessing's resource
    # tracker): only children started during this test count as strays
    _EARLIER.clear()
    _EARLIER.update(p.pid for p in psutil.Process().children(recursive=True))


def assert_no_strays() -> None:
    deadline = time.monotonic() + 2
    while sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sandbox_processes() == []
    assert [p for p in psutil.Process().children(recursive=True) if p.pid not in _EARLIER] == []


# --- normal behaviour -------------------------------------------------------------------------


def test_correct_function_passes_every_test(isolation: str) -> None:
    result = run_tests(ADD, ADD_TESTS)
    assert result.status == "ok" and result.passed and result.n_passed == 3
    assert [o.test for o in result.outcomes] == ADD_TESTS
    assert result.isolation == isolation and result.seconds < 5
    assert result.feedback().startswith("3/3 tests passed.")


def test_wrong_function_fails_the_right_tests() -> None:
    result = run_tests("def add(a, b):\n    return a * b\n", ADD_TESTS)
    assert [o.passed for o in result.outcomes] == [False, False, True]
    assert result.outcomes[0] == TestOutcome(ADD_TESTS[0], False, "AssertionError",
                                             "add(1, 2) is 2")
    assert not result.passed and result.n_passed == 1 and result.status == "ok"
    feedback = result.feedback()
    assert "1/3 tests passed." in feedback and "add(-1, 1) is -1" in feedback
    assert ADD_TESTS[2] not in feedback


def test_misnamed_function_gives_name_errors() -> None:
    result = run_tests(ADD.replace("add", "plus"), ADD_TESTS)
    assert {o.error for o in result.outcomes} == {"NameError"}
    assert "'add' is not defined" in result.outcomes[0].message


def test_syntax_error_is_a_status_and_no_test_runs() -> None:
    result = run_tests("def add(a, b)\n    return a + b\n", ADD_TESTS)
    assert result.status == "syntax" and "SyntaxError" in result.detail
    assert {o.error for o in result.outcomes} == {"NotRun"}
    assert "SyntaxError" in result.feedback()


def test_setup_multiline_tests_and_unicode_output() -> None:
    code = "def root(x):\n    print('√', x, 'ünïcödé ✓')\n    return math.sqrt(x)\n"
    tests = ["r = root(16)\nassert r == 4.0", "for x in (1, 4, 9):\n    assert root(x) ** 2 == x",
             "assert root(2) == 'oops'"]
    result = run_tests(code, tests, setup="import math")
    assert [o.passed for o in result.outcomes] == [True, True, False]
    assert "√ 16 ünïcödé ✓" in result.stdout
    assert result.outcomes[2].message == "root(2) is 1.4142135623730951"


def test_errors_while_loading_the_code_fail_every_test() -> None:
    result = run_tests(ADD + "print(input())\n", ADD_TESTS[:2])
    assert result.status == "ok" and {o.error for o in result.outcomes} == {"EOFError"}
    assert result.outcomes[0].message.startswith("while running the code")


def test_system_exit_and_bad_test_syntax_are_per_test_failures() -> None:
    result = run_tests(ADD, ["raise SystemExit(3)", "assert add(", "assert add(1, 1) == 2"])
    assert [o.error for o in result.outcomes] == ["SystemExit", "SyntaxError", None]


def test_results_do_not_travel_over_stdout() -> None:
    fake = "{'k': 'test', 'i': 0, 'passed': True, 'error': None, 'message': ''}"
    result = run_tests(f"print({fake!r})\nprint(\"{{'k': 'done'}}\")", ["assert False"])
    assert result.outcomes[0].error == "AssertionError" and fake in result.stdout


def test_runs_are_deterministic() -> None:
    code = "print(list({'apple', 'banana', 'cherry', 'date', 'elderberry', 'fig'}))"
    assert run_tests(code, []).stdout == run_tests(code, []).stdout


def test_environment_is_stripped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COALIGN_TEST_API_KEY", "sk-secret")
    result = run_tests("import os", [
        "assert 'COALIGN_TEST_API_KEY' not in os.environ",
        f"assert os.environ['HOME'] != {str(Path.home())!r}",
        "assert os.environ['PYTHONHASHSEED'] == '0'",
        "assert os.path.samefile(os.getcwd(), os.environ['HOME'])"])
    assert result.passed, result.feedback()


def test_limits_are_validated() -> None:
    assert Limits().memory_mb == 1024 and Limits(test_seconds=None).test_seconds is None
    for bad in ({"cpu_seconds": 0}, {"memory_mb": -1}, {"wall_seconds": True},
                {"output_bytes": "4096"}, {"test_seconds": 0}):
        with pytest.raises(ConfigError, match="must be a positive number"):
            Limits(**bad)
    with pytest.raises(ConfigError, match="sequence"):
        run_tests(ADD, "assert add(1, 2) == 3")


def test_feedback_is_clipped() -> None:
    result = SandboxResult(tuple(TestOutcome(f"assert f({i}) == {i}", False, "AssertionError",
                                             "x" * 300) for i in range(50)),
                           "ok", "", "", 0.1, "namespaces")
    assert len(result.feedback()) < 2100 and not result.passed


def test_fallback_warns_once_and_still_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_run, "_probe", lambda: ("rlimits-only", "forced by the test"))
    _isolate.warn_unisolated.cache_clear()
    with pytest.warns(SandboxWarning, match="forced by the test"):
        result = run_tests(ADD + "open('f', 'w').write('x')\nimport os\nos.chmod('.', 0o500)\n",
                           ADD_TESTS)
    assert result.passed and result.isolation == "rlimits-only"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run_tests(ADD, ADD_TESTS).passed  # once per process
    _isolate.warn_unisolated.cache_clear()


def test_working_directory_is_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a temp root of this test's own: another process's sandbox runs cannot come and go in it
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    run_tests("open('junk.txt', 'w').write('x' * 1000)", [])
    run_tests("while True: pass", [], limits=Limits(wall_seconds=1, test_seconds=None))
    assert not list(tmp_path.glob("coalign-sandbox-*"))


# --- runaway code ---------------------------------------------------------------------------


def test_infinite_loop_hits_the_cpu_limit() -> None:
    # A roomy wall limit: on a loaded machine one CPU second can take many wall seconds, and
    # the detail says which limit ended the run (no wall-clock bound, which flaked under load).
    limits = Limits(wall_seconds=60, cpu_seconds=1, test_seconds=None)
    result = run_tests("def spin():\n    while True:\n        pass\n", ["assert 1", "spin()",
                                                                    "assert 2"], limits=limits)
    assert result.status == "timeout" and "CPU time limit" in result.detail, result.detail
    assert [o.error for o in result.outcomes] == [None, "Timeout", "NotRun"]
    assert "CPU time limit" in result.outcomes[2].message  # the budget is spent for the rest


def test_sleeping_test_hits_the_wall_limit() -> None:
    limits = Limits(wall_seconds=1.5, test_seconds=None)
    start = time.monotonic()
    result = run_tests("import time", ["time.sleep(60)", "assert 1"], limits=limits)
    assert result.status == "timeout" and "wall" in result.detail
    assert time.monotonic() - start < 3
    assert [o.error for o in result.outcomes] == ["Timeout", "NotRun"]
    assert_no_strays()


def test_per_test_limit_lets_later_tests_run() -> None:
    result = run_tests("import time", ["while True: pass", "time.sleep(60)", "assert 1"],
                       limits=Limits(wall_seconds=5, test_seconds=0.5))
    assert result.status == "ok"
    assert [o.error for o in result.outcomes] == ["Timeout", "Timeout", None]


def test_per_test_limit_counts_cpu_so_a_loaded_machine_sees_the_same_outcomes() -> None:
    """A replayed reviser prompt holds the executor's feedback: it must not depend on the load."""
    loops = ["while True: pass", "while True: pass", "assert 1"]
    limits = Limits(wall_seconds=8, cpu_seconds=2, test_seconds=0.5)
    idle = run_tests("", loops, limits=limits)
    cpu = os.sched_getaffinity(0)
    one = {min(cpu)}
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(3)]
    try:
        for hog in hogs:
            os.sched_setaffinity(hog.pid, one)
        os.sched_setaffinity(0, one)  # the sandbox child inherits it: a quarter of one core
        loaded = run_tests("", loops, limits=limits)
    finally:
        os.sched_setaffinity(0, cpu)
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert idle.feedback() == loaded.feedback()
    assert [o.error for o in loaded.outcomes] == ["Timeout", "Timeout", None]
    # blocking uses no CPU: it runs up to twice the limit on the wall clock
    slept = run_tests("import time", ["time.sleep(0.7)"], limits=limits)
    assert slept.passed


def test_memory_hogs_fail_without_hurting_the_parent() -> None:
    rss = psutil.Process().memory_info().rss
    # time enough to fault in 512 MB on a slow machine: this test is about memory, and CI once
    # saw the growing list reach its 1 s test limit first
    roomy = Limits(wall_seconds=20, cpu_seconds=10, test_seconds=8, memory_mb=512)
    result = run_tests("grown = []", ["x = bytearray(10**10)",
                                      "while True:\n    grown.append(' ' * 10**6)", "assert 1"],
                       limits=roomy)
    assert [o.error for o in result.outcomes[:2]] == ["MemoryError", "MemoryError"]
    assert result.status in ("ok", "memory")
    assert psutil.Process().memory_info().rss - rss < 50 * 2**20


def test_huge_output_is_clipped() -> None:
    rss = psutil.Process().memory_info().rss
    result = run_tests("print('x' * 10**8)", ["assert 1"], limits=FAST)
    assert result.passed and len(result.stdout) < FAST.output_bytes + 100
    assert "more bytes clipped" in result.stdout
    endless = run_tests("import sys\nwhile True:\n    sys.stdout.write('y' * 4096)\n", [],
                        limits=Limits(wall_seconds=1, test_seconds=None))
    assert endless.status == "timeout" and len(endless.stdout) < FAST.output_bytes + 100
    assert psutil.Process().memory_info().rss - rss < 50 * 2**20


def test_early_exit_and_segfault_are_crashes() -> None:
    result = run_tests("import os", ["assert 1", "os._exit(0)", "assert 1"], limits=FAST)
    assert result.status == "crashed" and "exited with code 0" in result.detail
    # a fresh worker runs the tests after the crash
    assert [o.error for o in result.outcomes] == [None, "Crashed", None]
    segv = run_tests("import ctypes", ["ctypes.string_at(0)"], limits=FAST)
    assert segv.status == "crashed" and "SIGSEGV" in segv.detail


# --- containment ------------------------------------------------------------------------------


def test_fork_bomb_is_contained(isolation: str) -> None:
    if not hostile_allowed(isolation):
        return
    start = time.monotonic()
    bomb = run_tests("import os", ["while True:\n    os.fork()"], limits=FAST)
    assert bomb.outcomes[0].error in ("BlockingIOError", "Timeout")
    stubborn = run_tests("import os", ["while True:\n    try:\n        os.fork()\n"
                                       "    except OSError:\n        pass"], limits=FAST)
    assert stubborn.outcomes[0].error == "Timeout"
    assert time.monotonic() - start < 2 * FAST.wall_seconds + 2
    assert_no_strays()


def test_process_budget_is_per_sandbox(isolation: str) -> None:
    if not hostile_allowed(isolation):
        return
    code = ("import os, time\nkids = 0\ntry:\n    while True:\n        if os.fork() == 0:\n"
            "            time.sleep(60)\n            os._exit(0)\n        kids += 1\n"
            "except OSError:\n    pass\n")
    limits = Limits(max_processes=8, wall_seconds=5)
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: run_tests(code, ["assert kids == 6, kids"],
                                                    limits=limits), range(2)))
    # 8 processes per sandbox: its supervisor, the harness and 6 children, in parallel.
    assert all(r.passed for r in results), [r.feedback() for r in results]
    assert_no_strays()


def test_cannot_kill_the_parent(isolation: str) -> None:
    if not hostile_allowed(isolation):
        return
    result = run_tests("import os, signal", [
        f"os.kill({os.getpid()}, signal.SIGKILL)", "os.kill(os.getppid(), signal.SIGKILL)",
        "os.kill(-1, signal.SIGKILL)", "assert 1"], limits=FAST)
    assert result.outcomes[0].error in ("ProcessLookupError", "PermissionError")
    assert result.status == "ok" and result.outcomes[-1].passed
    assert_no_strays()


def test_cannot_read_the_home_directory(isolation: str) -> None:
    with tempfile.NamedTemporaryFile("w", dir=Path.home(), prefix="coalign-sandbox-secret-",
                                     suffix=".txt") as secret:
        secret.write("top secret")
        secret.flush()
        result = run_tests("import os", [f"assert 'secret' not in open({secret.name!r}).read()",
                                         f"assert {Path(secret.name).name!r} not in "
                                         f"os.listdir({str(Path.home())!r})"], limits=FAST)
    if isolation == "namespaces":  # the home exists inside only when Python lives under it
        assert result.outcomes[0].error == "FileNotFoundError"
        assert result.outcomes[1].passed or result.outcomes[1].error == "FileNotFoundError"


def test_cannot_write_outside_its_directory(isolation: str) -> None:
    name = f"coalign-sandbox-escape-{uuid.uuid4().hex}"
    targets = [Path("/tmp") / name, Path(__file__).parent / name, Path.home() / name]
    try:
        result = run_tests("", [f"open({str(t)!r}, 'w').write('x')" for t in targets],
                           limits=FAST)
        if isolation == "namespaces":
            assert [o.passed for o in result.outcomes] == [True, False, False]  # /tmp is private
            assert all(not t.exists() for t in targets)
    finally:
        for t in targets:
            t.unlink(missing_ok=True)


def test_no_network(isolation: str) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.setblocking(False)
        port = server.getsockname()[1]
        result = run_tests("import socket", [
            f"socket.create_connection(('127.0.0.1', {port}), timeout=1).close()"], limits=FAST)
        if isolation == "namespaces":
            assert result.outcomes[0].error in ("OSError", "ConnectionRefusedError")
            with pytest.raises(BlockingIOError):
                server.accept()
