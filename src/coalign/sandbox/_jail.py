"""Child side: lock the sandbox child into Linux namespaces before any untrusted code runs.

Sent to the child compiled together with ``_harness`` (see ``_isolate.program``), so it
imports nothing from coalign and has no ``from __future__`` line. Python 3.11 has no
``os.unshare``, hence libc through ctypes. The util-linux ``unshare`` tool cannot do this: it
cannot drop root to another uid between mounting and creating the user namespace.

Steps, each verified on Linux 6.x, as root and as a normal user:

1. A private mount namespace (real root) or a user + mount namespace (normal user). Every mount
   becomes read-only; the parent's home is covered by an empty read-only tmpfs (with the Python
   installation bound back in when it lives there); /tmp becomes a small private tmpfs, the
   working directory.
2. Root switches to uid/gid 65534: the kernel exempts uid 0 from RLIMIT_NPROC, even when uid 0 is
   merely mapped to root in a user namespace, and 65534 can read none of root's files.
3. A second user namespace with new mount, network, pid, ipc and uts namespaces. The mounts of
   step 1 are now locked: they cannot be unmounted or made writable from inside. The network has
   only a loopback that is down. RLIMIT_NPROC is counted per user namespace, so parallel
   sandboxes do not share one budget.
4. fork: the child is pid 1 of the new pid namespace. When it dies, the kernel kills every
   process in the namespace. The parent stays outside, waits, and reports how the child ended.
5. The child starts its own session, mounts its own /proc, drops all capabilities and sets
   no_new_privs.
"""

import ctypes
import os
import signal

_NEWNS, _NEWUSER, _NEWNET, _NEWPID = 0x20000, 0x10000000, 0x40000000, 0x20000000
_NEWIPC, _NEWUTS = 0x08000000, 0x04000000
_RDONLY, _NOSUID, _NODEV, _NOEXEC, _REMOUNT = 1, 2, 4, 8, 32
_BIND, _REC, _PRIVATE = 4096, 16384, 1 << 18
_SYS_MOUNT_SETATTR, _AT_FDCWD, _AT_RECURSIVE, _ATTR_RDONLY = 442, -100, 0x8000, 1
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS = 1, 4, 38
_NOBODY = 65534

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]


class _MountAttr(ctypes.Structure):
    _fields_ = [("set", ctypes.c_uint64), ("clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _check(ret, what):
    if ret == -1:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source, target, fstype, flags, data=None):
    enc = [s.encode() if s is not None else None for s in (source, target, fstype, data)]
    _check(_libc.mount(enc[0], enc[1], enc[2], flags, enc[3]), f"mount {target}")


def _set_readonly(path, readonly, recursive):
    attr = _MountAttr(_ATTR_RDONLY if readonly else 0, 0 if readonly else _ATTR_RDONLY, 0, 0)
    _check(_libc.syscall(ctypes.c_long(_SYS_MOUNT_SETATTR), ctypes.c_long(_AT_FDCWD),
                         path.encode(), ctypes.c_uint(_AT_RECURSIVE if recursive else 0),
                         ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr))),
           f"mount_setattr {path}")


def _unshare(flags):
    _check(_libc.unshare(flags), "unshare")


def _map_ids(uid, gid):
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1\n"),
                       ("gid_map", f"{gid} {gid} 1\n")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def _private_view(homes, keep, tmp_mb):
    # Open the kept paths before the home is covered; they are bound back in through the fds.
    kept = [(path, os.open(path, os.O_PATH | os.O_DIRECTORY)) for path in keep]
    _mount(None, "/", None, _REC | _PRIVATE)
    _set_readonly("/", True, recursive=True)
    _set_readonly("/proc", False, recursive=False)  # the id maps of step 3 are written there
    for home in homes:
        _mount("tmpfs", home, "tmpfs", _NOSUID | _NODEV, "size=1m,mode=0755")
        for path, fd in kept:
            if path.startswith(home + "/"):
                os.makedirs(path, 0o755, exist_ok=True)
                _mount(f"/proc/self/fd/{fd}", path, None, _BIND | _REC)
        _mount(None, home, None, _REMOUNT | _RDONLY | _NOSUID | _NODEV)
    for _, fd in kept:
        os.close(fd)
    _mount("tmpfs", "/tmp", "tmpfs", _NOSUID | _NODEV, f"size={tmp_mb}m,nr_inodes=4096,mode=1777")
    os.chdir("/tmp")


def _drop_capabilities():
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    _check(_libc.capset(header, (ctypes.c_uint32 * 6)()), "capset")
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def _supervise(pid, report):
    report({"k": "pid", "pid": pid})
    _, status, usage = os.wait4(pid, 0)
    report({"k": "exit", "code": os.waitstatus_to_exitcode(status),
            "cpu": usage.ru_utime + usage.ru_stime})
    os._exit(0)


def enter_jail(jail, report):
    """Return in the jailed child, pid 1 of the new namespaces; the outer parent never returns."""
    uid, gid = os.geteuid(), os.getegid()
    _unshare(_NEWNS if uid == 0 else _NEWNS | _NEWUSER)
    if uid != 0:
        _map_ids(uid, gid)
    _private_view(jail["homes"], jail["keep"], jail["tmp_mb"])
    if uid == 0:
        os.setgroups([])
        os.setgid(_NOBODY)
        os.setuid(_NOBODY)
        uid = gid = _NOBODY
        # A uid change makes the process undumpable, which makes /proc/self/uid_map root's.
        _check(_libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0), "dumpable")
    _unshare(_NEWUSER | _NEWNS | _NEWNET | _NEWPID | _NEWIPC | _NEWUTS)
    _map_ids(uid, gid)
    pid = os.fork()
    if pid:
        _supervise(pid, report)
    _check(_libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
    os.setsid()  # else kill(0, ...) from inside would reach the supervisor through the group
    try:  # without it /proc still shows the outer processes, which cannot be signalled from here
        _mount("proc", "/proc", "proc", _NOSUID | _NODEV | _NOEXEC)
    except OSError:
        pass
    _drop_capabilities()
