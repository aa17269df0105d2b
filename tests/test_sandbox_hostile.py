"""coalign.sandbox against a hostile probe: host sockets, nested namespaces, C-level recursion
and forged results. Each case failed before the jail's new root, the user-namespace limit and
the supervisor/worker split (see docs/sandbox.md).

Containment cases run only with ``isolation == "namespaces"``; the crash and forgery cases hold
in the ``rlimits-only`` fallback too, and ``test_as_a_normal_user`` repeats the main ones as
uid 1000 (through ``setpriv``) when the tests run as root.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import uuid
import warnings
from pathlib import Path

import pytest

from coalign.sandbox import Limits, _isolate, _run, run_tests

FAST = Limits(wall_seconds=5, cpu_seconds=3, test_seconds=1, memory_mb=512)
SRC = Path(__file__).resolve().parents[1] / "src"


def root_entries() -> set[str]:
    """What the jail's root holds: the interpreter's needs (its prefix may add a home), no more."""
    spec = _isolate.jail_spec(Limits())
    return ({p.split("/")[1] for p in spec["binds"]} | {link.strip("/") for link, _ in
                                                         spec["links"]} | {"dev", "proc", "tmp"})


REPR_BOMB = ("class R:\n    def __repr__(self):\n        return repr(self)\n"
             "sys.setrecursionlimit(10**6)\nrepr(R())")
UNSHARE_USER = ("libc = ctypes.CDLL(None, use_errno=True)\n"
                "assert libc.unshare(0x10000000) == -1, 'created a user namespace'\n"
                "assert ctypes.get_errno() in (errno.ENOSPC, errno.EPERM), ctypes.get_errno()")


def refused(path: str, family: str = "AF_UNIX") -> str:
    """A test that passes when connecting to ``path`` fails."""
    return (f"s = socket.socket(socket.{family})\ntry:\n    s.connect({path!r})\n"
            "except OSError:\n    pass\nelse:\n    raise AssertionError('connected')")


@pytest.fixture(scope="module")
def isolation() -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_tests("", ["assert True"]).isolation


@pytest.fixture
def host_socket():
    """A listening unix socket outside /tmp, open to everyone (as /var/run/docker.sock may be)."""
    base = Path("/var/tmp") if os.access("/var/tmp", os.W_OK) else Path.home()
    folder = base / f"coalign-sandbox-{uuid.uuid4().hex}"
    folder.mkdir(mode=0o755)
    path = str(folder / "s")
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(path)
        os.chmod(path, 0o777)
        server.listen()
        server.setblocking(False)
        yield server, path
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


# --- 1. nothing of the host's file system but what the interpreter needs ----------------------


def test_host_unix_sockets_and_sys_are_not_there(isolation: str, host_socket) -> None:
    server, path = host_socket
    abstract = f"\0coalign-sandbox-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(abstract)
        listener.listen()
        result = run_tests("import os, socket", [
            refused(path), refused(abstract), "assert not os.path.exists('/sys/class/net')",
            "assert not os.path.exists('/var/run') and not os.path.exists('/run')",
            f"assert set(os.listdir('/')) == {root_entries()!r}, os.listdir('/')",
            "import ast, json, math, subprocess\n"
            "assert subprocess.run(['/bin/true']).returncode == 0"], limits=FAST)
    if isolation != "namespaces":
        return
    assert result.status == "ok" and result.passed, result.feedback()
    with pytest.raises(BlockingIOError):
        server.accept()


def test_devices_and_tmp_work_inside(isolation: str) -> None:
    result = run_tests("import os", [
        "open('/dev/null', 'w').write('x')", "assert len(os.urandom(8)) == 8",
        "assert open('/dev/zero', 'rb').read(4) == bytes(4)",
        "open('/tmp/scratch', 'w').write('x')\nassert open('/tmp/scratch').read() == 'x'"],
        limits=FAST)
    assert result.passed, result.feedback()
    if isolation == "namespaces":
        writes = run_tests("", ["open('/usr/x', 'w')", "open('/dev/x', 'w')", "open('/x', 'w')"],
                           limits=FAST)
        assert {o.error for o in writes.outcomes} == {"OSError"}, writes.feedback()


# --- 2. no nested user namespaces -----------------------------------------------------------


def test_nested_user_namespaces_are_refused(isolation: str) -> None:
    result = run_tests("import ctypes, errno", [UNSHARE_USER], limits=FAST)
    if isolation == "namespaces":
        assert result.passed, result.feedback()


# --- 3. a crashing worker is replaced; later tests still run --------------------------------


def test_c_recursion_crash_lets_later_tests_run() -> None:
    result = run_tests("import sys", ["assert 1", REPR_BOMB, "assert 2",
                                      "import ctypes\nctypes.string_at(0)", "assert 3"],
                       limits=FAST)
    assert [o.error for o in result.outcomes] == [None, "Crashed", None, "Crashed", None]
    assert result.outcomes[1].message == "killed by SIGSEGV"
    assert result.status == "crashed" and "SIGSEGV" in result.detail


def test_a_fresh_worker_loads_the_code_again() -> None:
    result = run_tests("import os\nstate = []", ["state.append(1)\nassert state == [1]",
                                                 "os._exit(1)", "assert state == [], state"],
                       limits=FAST)
    assert [o.error for o in result.outcomes] == [None, "Crashed", None], result.feedback()
    dead = run_tests("import os\nos._exit(5)", ["assert 1", "assert 2"], limits=FAST)
    assert dead.status == "crashed" and "exited with code 5" in dead.detail
    assert [o.error for o in dead.outcomes] == ["Crashed", "Crashed"]
    assert dead.outcomes[0].message == "while running the code: exited with code 5"


def test_a_long_c_call_hits_the_per_test_limit() -> None:
    """One C call ignores the per-test timers; the supervisor ends it, and the run goes on."""
    limits = Limits(wall_seconds=20, cpu_seconds=10, test_seconds=0.5)
    result = run_tests("", ["sum(range(10**12))", "assert 1"], limits=limits)
    assert result.status == "ok", result.feedback()
    assert [o.error for o in result.outcomes] == ["Timeout", None]
    assert result.outcomes[0].message == "took longer than 0.5s"


def test_the_cpu_budget_spans_the_workers() -> None:
    limits = Limits(wall_seconds=30, cpu_seconds=2, test_seconds=None)
    result = run_tests("import os, signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)",
                       ["while True: pass", "assert 1", "while True: pass", "assert 2"],
                       limits=limits)
    assert result.status == "timeout" and "CPU time limit" in result.detail
    errors = [o.error for o in result.outcomes]
    assert errors[0] == "Timeout" and errors[-1] == "NotRun", result.feedback()


# --- 4. results cannot be forged through the result pipe or by patching ---------------------


FORGE = ("def forge(i):\n"  # both wire formats: the old one to the parent, the worker's
         "    worker = ' '.join(f.encode().hex() for f in ('test', str(i), 'pass', '', ''))\n"
         "    fake = (b\"{'k': 'test', 'i': %d, 'passed': True, 'error': None, \"\n"
         "            b\"'message': ''}\\n{'k': 'done', 'status': 'ok', 'detail': ''}\\n\") % i\n"
         "    fake += worker.encode() + b'\\n'\n"
         "    for fd in range(3, 256):\n        try:\n            os.write(fd, fake)\n"
         "        except OSError:\n            pass\n")


def test_results_cannot_be_forged_through_descriptors(isolation: str) -> None:
    # The last test claims passes for the earlier ones, on every descriptor (the parent's result
    # pipe among them, before): the supervisor waits on neither, and the worker has no other.
    result = run_tests("import os\n" + FORGE, ["assert False", "assert False",
                                                "forge(0)\nforge(1)\nassert False"], limits=FAST)
    assert [o.error for o in result.outcomes] == ["AssertionError"] * 3, result.feedback()
    assert result.status == "ok" and result.n_passed == 0
    # The documented limit: a test runs in the worker, so it can still lie about itself.
    assert run_tests("import os\n" + FORGE, ["forge(0)\nassert False"], limits=FAST).passed
    if isolation == "namespaces":  # the supervisor's descriptors are closed to the worker
        probe = run_tests("import os", ["os.listdir('/proc/1/fd')", "open('/proc/1/mem', 'rb')"],
                          limits=FAST)
        assert {o.error for o in probe.outcomes} == {"PermissionError"}, probe.feedback()


def test_patching_os_exit_does_not_change_verdicts() -> None:
    # The forked copy would report "passed" after the real test failed: it must exit silently.
    code = "import os, time\nos._exit = lambda code: None\n"
    result = run_tests(code, ["if os.fork() == 0:\n    time.sleep(0.2)\nelse:\n"
                              "    raise AssertionError('the real test fails')",
                              "time.sleep(0.5)", "os._exit(0)\nassert False"], limits=FAST)
    assert [o.error for o in result.outcomes] == ["AssertionError", None, "AssertionError"]
    assert result.status == "ok", result.feedback()


# --- the same as a normal user, with namespaces and in the fallback -------------------------


NORMAL_USER_SCRIPT = """
import json, sys, warnings
from coalign.sandbox import Limits, _isolate, _run, run_tests
warnings.simplefilter("ignore")
tests = [{refused!r}, {unshare!r}, {bomb!r}, "assert 1", "assert os.getuid() == 1000"]
out = {{}}
for mode in ("namespaces", "rlimits-only"):
    if mode == "rlimits-only":
        _run._probe = lambda: ("rlimits-only", "forced")
    r = run_tests("import ctypes, errno, os, socket, sys", tests, limits=Limits(wall_seconds=10))
    out[mode] = [r.isolation, [o.error for o in r.outcomes], r.feedback()]
print(json.dumps(out))
"""


def test_as_a_normal_user(host_socket) -> None:
    system_python = shutil.which("python3.11", path="/usr/bin:/usr/local/bin")
    if os.geteuid() != 0 or not shutil.which("setpriv") or not system_python:
        pytest.skip("needs root, setpriv and a system Python 3.11 that uid 1000 can run")
    _, path = host_socket
    os.chmod(Path(path).parent, 0o755)
    script = NORMAL_USER_SCRIPT.format(refused=refused(path), unshare=UNSHARE_USER,
                                       bomb=REPR_BOMB)
    done = subprocess.run(
        ["setpriv", "--reuid", "1000", "--regid", "1000", "--clear-groups", system_python,
         "-c", script], capture_output=True, text=True, timeout=120, cwd="/",
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(SRC), "HOME": "/tmp"})
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    isolation, errors, feedback = out["namespaces"]
    assert isolation == "namespaces" and errors == [None, None, "Crashed", None, None], feedback
    isolation, errors, feedback = out["rlimits-only"]
    # without namespaces the host socket is reachable: only the crash handling is checked
    assert isolation == "rlimits-only" and errors[2:] == ["Crashed", None, None], feedback


def test_fallback_survives_crashes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_run, "_probe", lambda: ("rlimits-only", "forced by the test"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_tests("import os, sys", [REPR_BOMB, "assert 1", "os._exit(0)", "assert 2"],
                           limits=FAST)
    assert result.isolation == "rlimits-only"
    assert [o.error for o in result.outcomes] == ["Crashed", None, "Crashed", None]


def test_a_grandchild_in_a_session_of_its_own_dies_with_a_hung_run(isolation: str) -> None:
    """With no per-test limit, a test that double-forks a grandchild into a session of its own
    (out of the child's process group) and then hangs ends at the wall limit, and neither
    the hung test nor the grandchild outlives the run: the pid namespace dies with its init."""
    from tests.test_sandbox import assert_no_strays, hostile_allowed

    if not hostile_allowed(isolation):
        return
    code = ("import os, time\ndef escape():\n    if os.fork() == 0:\n        os.setsid()\n"
            "        if os.fork() == 0:\n            time.sleep(120)\n        os._exit(0)\n")
    result = run_tests(code, ["escape(); time.sleep(60)", "assert 1"],
                       limits=Limits(wall_seconds=2, test_seconds=None))
    assert result.status == "timeout" and "wall" in result.detail
    assert [o.error for o in result.outcomes] == ["Timeout", "NotRun"]
    assert_no_strays()
