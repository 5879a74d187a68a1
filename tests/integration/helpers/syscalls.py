"""Try the system calls execd's sandbox refuses; print {name: errno} as
JSON (0: the call worked).  Run by a child of execd, as a program
(`syscalls.py EXECD_PID`) or inside a kernel (exec with EXECD_PID set).

Each call is made so that, unfiltered and without privileges, it fails
with an errno other than EPERM (a bad pointer, a bad flag) or succeeds
harmlessly, so EPERM can only come from the filter.
"""
import ctypes
import errno
import json
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

NR = {   # x86_64
    "mount": 165, "setns": 308, "unshare": 272, "clone": 56,
    "clone3": 435, "clock_settime": 227, "add_key": 248,
    "io_uring_setup": 425, "userfaultfd": 323, "perf_event_open": 298,
    "personality": 135, "process_vm_readv": 310, "kill": 62,
    "tgkill": 234, "tkill": 200, "pidfd_open": 434, "prlimit64": 302,
    "ptrace": 101,
}
CLONE_NEWUSER, CLONE_NEWNET, CLONE_THREAD = 0x10000000, 0x40000000, 0x10000
ADDR_NO_RANDOMIZE = 0x0040000


def call(name, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(NR[name]),
                     *[ctypes.c_long(a) for a in args])
    return ctypes.get_errno() if r < 0 else 0


def classes():
    """The default profile's classes, one call each."""
    out = {
        "mount": call("mount", 0, 0, 0, 0, 0),
        "setns": call("setns", -1, 0),
        "unshare": call("unshare", 0xfffffff0 << 32),
        # Invalid flag combinations: EINVAL unless refused first.
        "clone_newuser": call("clone", CLONE_NEWUSER | CLONE_THREAD, 0,
                              0, 0, 0),
        "clone_newnet": call("clone", CLONE_NEWNET | CLONE_THREAD, 0, 0,
                             0, 0),
        "clone3": call("clone3", 0, 0),
        "clock_settime": call("clock_settime", 0, 0),
        "add_key": call("add_key", 0, 0, 0, 0, 0),
        "io_uring_setup": call("io_uring_setup", 0, 0),
        "userfaultfd": call("userfaultfd", 0xffff),
        "perf_event_open": call("perf_event_open", 0, 0, -1, -1, 0),
    }
    old = libc.personality(ctypes.c_ulong(0xffffffff))
    out["personality_query"] = 0 if old >= 0 else ctypes.get_errno()
    out["personality_no_aslr"] = call("personality", ADDR_NO_RANDOMIZE)
    if out["personality_no_aslr"] == 0:
        libc.personality(ctypes.c_ulong(old))
    out["personality_linux32"] = call("personality", 0x0008)
    libc.personality(ctypes.c_ulong(old))
    # Reading one's own memory: allowed but in strict.
    out["process_vm_readv_self"] = call("process_vm_readv", os.getpid(),
                                        0, 0, 0, 0, 0)
    return out


def protect(pid):
    """Calls aimed at execd (pid), which every profile refuses."""
    out = {
        "kill": call("kill", pid, 0),
        "kill_upper_bits": call("kill", (1 << 32) | pid, 0),
        "kill_group": call("kill", -pid, 0),
        "kill_all": call("kill", -1, 0),
        "tgkill": call("tgkill", pid, pid, 0),
        "tkill": call("tkill", pid, 0),
        "pidfd_open": call("pidfd_open", pid, 0),
        "prlimit64": call("prlimit64", pid, 7, 0, 0),
        "ptrace_attach": call("ptrace", 16, pid, 0, 0),
        "process_vm_readv": call("process_vm_readv", pid, 0, 0, 0, 0, 0),
    }
    # A signal to any thread's id would reach the whole process.
    tids = [int(t) for t in os.listdir("/proc/%d/task" % pid)]
    out["kill_threads"] = sorted({call("kill", t, 0) for t in tids})
    out["threads"] = len(tids)
    for f in ("environ", "mem", "fd"):
        try:
            # fd: what execd has open, through its fd 0
            open("/proc/%d/%s" % (pid, "fd/0" if f == "fd" else f),
                 "rb").close()
            out["proc_" + f] = 0
        except OSError as e:
            out["proc_" + f] = e.errno
    return out


def main(pid):
    res = classes()
    res.update({"execd_" + k: v for k, v in protect(pid).items()})
    with open("/proc/self/status") as f:
        for line in f:
            k, v = line.split(":", 1)
            if k in ("Seccomp", "Seccomp_filters", "NoNewPrivs", "CapBnd"):
                res[k] = v.strip()
    res["EPERM"] = errno.EPERM
    print("SYSCALLS " + json.dumps(res, sort_keys=True))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1
         else int(os.environ["EXECD_PID"]))
