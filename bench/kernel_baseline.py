"""kernel_baseline.py -- the jupyter_client side of the kernel bench rows.

Run with the Python that has jupyter_client and ipykernel (Debian's
/usr/bin/python3); bench/run.sh and bench/kbench call it.

  kernel_baseline.py exec CONNECTION_FILE N
      Attach a BlockingKernelClient to a running kernel.  After 10
      warm-ups, N times: execute("1+1"), then wait for the iopub status
      idle and the shell execute_reply with that msg_id (the order
      execute_interactive uses).  Prints "median_us min_us".
  kernel_baseline.py start N
      N times: KernelManager(kernel_name="python3").start_kernel(), a
      client, start_channels() and wait_for_ready(); then shut it down.
      Prints "median_us min_us max_us info_median_us", the last being the
      median time to the kernel_info reply that wait_for_ready accepts
      (it then drains iopub until 0.2 s pass with no message).

Times are CLOCK_MONOTONIC.  Every wait has a timeout, and every kernel
started here is shut down, even on failure.
"""

import os
import statistics
import sys

from jupyter_client import BlockingKernelClient, KernelManager

from benchlib import now_us

WARMUPS = 10
TIMEOUT = 30  # seconds, for one message or one readiness wait


def round_trip(kc):
    """One "1+1" until both its idle and its reply are in; microseconds."""
    t0 = now_us()
    msg_id = kc.execute("1+1", silent=False, store_history=True,
                        allow_stdin=False, stop_on_error=True)
    while True:
        m = kc.get_iopub_msg(timeout=TIMEOUT)
        if (m["parent_header"].get("msg_id") == msg_id
                and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"):
            break
    while True:
        m = kc.get_shell_msg(timeout=TIMEOUT)
        if (m["parent_header"].get("msg_id") == msg_id
                and m["msg_type"] == "execute_reply"):
            break
    if m["content"]["status"] != "ok":
        raise RuntimeError("1+1 failed: %r" % (m["content"],))
    return now_us() - t0


def cmd_exec(connection_file, n):
    """Round trips through jupyter_client on an already running kernel."""
    kc = BlockingKernelClient(connection_file=connection_file)
    kc.load_connection_file()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=TIMEOUT)
        for _ in range(WARMUPS):
            round_trip(kc)
        times = [round_trip(kc) for _ in range(n)]
    finally:
        kc.stop_channels()
    print("%d %d" % (statistics.median(times), min(times)))


def start_one():
    """Start a kernel until wait_for_ready returns; shut it down after."""
    km = KernelManager(kernel_name="python3")
    seen = {}
    t0 = now_us()
    km.start_kernel()
    kc = None
    try:
        kc = km.client()
        handle = kc._handle_kernel_info_reply

        def noted(msg):
            """wait_for_ready accepted a kernel_info reply: note when."""
            seen.setdefault("info", now_us())
            handle(msg)

        kc._handle_kernel_info_reply = noted
        kc.start_channels()
        kc.wait_for_ready(timeout=TIMEOUT)
        t1 = now_us()
    finally:
        if kc is not None:
            kc.stop_channels()
        km.shutdown_kernel(now=False)
    return t1 - t0, seen["info"] - t0


def cmd_start(n):
    """Kernel start to ready through KernelManager, n times."""
    runs = [start_one() for _ in range(n)]
    full = [r[0] for r in runs]
    info = [r[1] for r in runs]
    print("%d %d %d %d" % (statistics.median(full), min(full), max(full),
                           statistics.median(info)))


def main(argv):
    """Dispatch on the verb."""
    # execd sets this for its kernels (it silences debugpy's warnings on
    # every start); the same here, so both sides start the same kernel.
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    if len(argv) == 4 and argv[1] == "exec":
        cmd_exec(argv[2], int(argv[3]))
    elif len(argv) == 3 and argv[1] == "start":
        cmd_start(int(argv[2]))
    else:
        sys.stderr.write("usage: kernel_baseline.py exec CONNECTION_FILE N\n"
                         "       kernel_baseline.py start N\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
