"""Child side: lock the sandbox child into Linux namespaces before any untrusted code runs.

Sent to the child compiled together with ``_harness`` (see ``_isolate.program``), so it
imports nothing from coalign and has no ``from __future__`` line. Python 3.11 has no
``os.unshare``, hence libc through ctypes. The util-linux ``unshare`` tool cannot do this: it
cannot drop root to another uid between mounting and creating the user namespace.

Steps, each verified on Linux 6.x, as root and as a normal user:

1. A private mount namespace (real root) or a user + mount namespace (normal user), and a new
   root: an empty tmpfs with read-only binds of /usr, the Python installation and
   /etc/ld.so.cache, the host's /bin, /lib... as symlinks or binds, a minimal /dev and a small
   private /tmp, the working directory. pivot_root then detaches the host's tree: no host path
   (a unix socket, /sys, a home) exists inside.
2. Root switches to uid/gid 65534: the kernel exempts uid 0 from RLIMIT_NPROC, even when uid 0 is
   merely mapped to root in a user namespace, and 65534 can read none of root's files.
3. A second user namespace with new mount, network, pid, ipc and uts namespaces. The mounts of
   step 1 are now locked: they cannot be unmounted or made writable from inside. The network has
   only a loopback that is down. RLIMIT_NPROC is counted per user namespace, so parallel
   sandboxes do not share one budget.
4. fork: the child is pid 1 of the new pid namespace. When it dies, the kernel kills every
   process in the namespace. The parent stays outside, waits, and reports how the child ended.
5. The child starts its own session, mounts its own /proc (required), sets the namespace's
   max_user_namespaces to 0, drops all capabilities and sets no_new_privs.
"""

import ctypes
import os
import signal

_NEWNS, _NEWUSER, _NEWNET, _NEWPID = 0x20000, 0x10000000, 0x40000000, 0x20000000
_NEWIPC, _NEWUTS = 0x08000000, 0x04000000
_RDONLY, _NOSUID, _NODEV, _NOEXEC, _REMOUNT = 1, 2, 4, 8, 32
_BIND, _REC, _PRIVATE, _DETACH = 4096, 16384, 1 << 18, 2
_DEVICES = ("null", "zero", "full", "random", "urandom")
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


def _pivot_root():
    # glibc has no wrapper; the number differs by architecture
    number = {"x86_64": 155, "aarch64": 41, "riscv64": 41}.get(os.uname().machine)
    if number is None:
        raise OSError(0, f"pivot_root: unknown syscall number on {os.uname().machine}")
    _check(_libc.syscall(ctypes.c_long(number), b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", _DETACH), "umount old root")  # the host tree, stacked on "/"


def _placeholder(path, directory):
    if directory:
        os.makedirs(path, 0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))


def _new_root(spec):
    """Switch to a tmpfs root holding only what the interpreter needs (see the module doc)."""
    root = "/tmp"  # any directory will do: pivot_root hides it along with the rest of the host
    _mount(None, "/", None, _REC | _PRIVATE)
    _mount("tmpfs", root, "tmpfs", _NOSUID | _NODEV, "size=1m,nr_inodes=1024,mode=0755")
    for path in spec["binds"]:
        _placeholder(root + path, os.path.isdir(path))
        _mount(path, root + path, None, _BIND | _REC)
        _set_readonly(root + path, True, recursive=True)
    for path, target in spec["links"]:
        os.symlink(target, root + path)
    dev = root + "/dev"
    os.mkdir(dev, 0o755)
    _mount("tmpfs", dev, "tmpfs", _NOSUID | _NODEV | _NOEXEC, "size=64k,nr_inodes=64,mode=0755")
    for name in _DEVICES:  # bound host nodes: a tmpfs mounted in a user namespace cannot hold any
        if os.path.exists("/dev/" + name):
            _placeholder(f"{dev}/{name}", False)
            _mount("/dev/" + name, f"{dev}/{name}", None, _BIND)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{dev}/{name}")
    _set_readonly(dev, True, recursive=False)  # the device binds stay writable
    # The host's /proc is needed only because the kernel lets a new pid namespace mount a fresh
    # /proc only where a full one is already visible; the jailed pid 1 covers it for good.
    os.mkdir(root + "/proc", 0o555)
    _mount("/proc", root + "/proc", None, _BIND | _REC)
    os.mkdir(root + "/tmp", 0o755)
    _mount("tmpfs", root + "/tmp", "tmpfs", _NOSUID | _NODEV,
           f"size={spec['tmp_mb']}m,nr_inodes=4096,mode=1777")
    _set_readonly(root, True, recursive=False)
    os.chdir(root)
    _pivot_root()
    os.chdir("/tmp")


def _drop_capabilities():
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    _check(_libc.capset(header, (ctypes.c_uint32 * 6)()), "capset")
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def set_dumpable(flag):
    _check(_libc.prctl(_PR_SET_DUMPABLE, flag, 0, 0, 0), "dumpable")


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
    _new_root(jail)
    if uid == 0:
        os.setgroups([])
        os.setgid(_NOBODY)
        os.setuid(_NOBODY)
        uid = gid = _NOBODY
        # A uid change makes the process undumpable, which makes /proc/self/uid_map root's.
        set_dumpable(1)
    _unshare(_NEWUSER | _NEWNS | _NEWNET | _NEWPID | _NEWIPC | _NEWUTS)
    _map_ids(uid, gid)
    pid = os.fork()
    if pid:
        _supervise(pid, report)
    _check(_libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
    os.setsid()  # else kill(0, ...) from inside would reach the supervisor through the group
    # Required: below it lies the host's /proc, whose /proc/<pid>/root leads out of the jail.
    _mount("proc", "/proc", "proc", _NOSUID | _NODEV | _NOEXEC)
    # Limits this namespace and all below it: code inside can create no user namespace, so it
    # never regains capabilities (and with them mount or unmount rights) in a nested one.
    with open("/proc/sys/user/max_user_namespaces", "w") as f:
        f.write("0")
    _drop_capabilities()
