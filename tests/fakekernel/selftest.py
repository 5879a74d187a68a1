#!/usr/bin/python3
"""Self-test of the fake kernel, driven by a real Jupyter client.

Each test starts fakekernel.py by hand on a fresh connection file (random
ports, written by jupyter_client), talks to it with jupyter_client's
BlockingKernelClient (or a raw ZeroMQ socket for frames a client would
reject), and kills it by pid afterwards.  Every wait is bounded, and every
test runs under an alarm.  The last line is "N passed, N failed".

Usage: /usr/bin/python3 selftest.py [substring-filter]
"""
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import uuid

import zmq
from jupyter_client.blocking import BlockingKernelClient
from jupyter_client.connect import write_connection_file
from jupyter_client.session import Session

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL = os.path.join(HERE, "fakekernel.py")
PYTHON = "/usr/bin/python3"
LIMIT = 30      # seconds per test


class Timeout(Exception):
    pass


class FK:
    """A fake kernel process and, optionally, a client connected to it."""

    def __init__(self, *flags, env=None, key=None):
        self.dir = tempfile.mkdtemp(prefix="fakekernel-test-")
        self.cf = os.path.join(self.dir, "kernel.json")
        if key is None:
            key = uuid.uuid4().hex.encode("ascii")
        self.cf, self.info = write_connection_file(self.cf, ip="127.0.0.1",
                                                   key=key)
        self.errpath = os.path.join(self.dir, "stderr")
        self.err = open(self.errpath, "wb")
        e = dict(os.environ)
        e.pop("FAKEKERNEL_FLAGS", None)
        e.update(env or {})
        # Run from an unrelated directory: the kernel must not care.
        self.proc = subprocess.Popen(
            [PYTHON, KERNEL, "-f", self.cf] + list(flags), cwd=self.dir,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=self.err, env=e)
        self.kc = None
        self.zctx = None

    @property
    def pid(self):
        return self.proc.pid

    def client(self, ready=True):
        kc = BlockingKernelClient(connection_file=self.cf)
        kc.load_connection_file()
        kc.start_channels()
        self.kc = kc
        if ready:
            kc.wait_for_ready(timeout=10)
            warm_up(kc)
        return kc

    def raw(self, kind, port_name):
        if self.zctx is None:
            self.zctx = zmq.Context()
        s = self.zctx.socket(kind)
        s.linger = 0
        s.connect("tcp://127.0.0.1:%d" % self.info[port_name])
        return s

    def session(self):
        return Session(key=self.info["key"].encode(),
                       signature_scheme=self.info["signature_scheme"])

    def wait(self, timeout=5):
        return self.proc.wait(timeout)

    def stderr(self):
        self.err.flush()
        with open(self.errpath, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def close(self):
        if self.kc is not None:
            try:
                self.kc.stop_channels()
            except Exception:  # noqa: B902 - best effort
                pass
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
        if self.zctx is not None:
            self.zctx.destroy(linger=0)
        self.err.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def warm_up(kc, tries=20):
    """Make sure iopub is subscribed: see a status for our own request."""
    for _ in range(tries):
        mid = kc.kernel_info()
        kc.get_shell_msg(timeout=5)
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            try:
                m = kc.get_iopub_msg(timeout=0.1)
            except queue.Empty:
                continue
            if m["parent_header"].get("msg_id") == mid:
                drain_until_idle(kc, mid, first=m)
                return
    raise AssertionError("iopub never delivered a status")


def drain_until_idle(kc, mid, first=None, timeout=5):
    """iopub messages of request mid, up to and including its idle."""
    out = []
    deadline = time.monotonic() + timeout
    m = first
    while True:
        if m is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no idle for %s; got %s" % (
                    mid, [x["msg_type"] for x in out]))
            try:
                m = kc.get_iopub_msg(timeout=left)
            except queue.Empty:
                continue
        if m["parent_header"].get("msg_id") == mid:
            out.append(m)
            if (m["msg_type"] == "status"
                    and m["content"]["execution_state"] == "idle"):
                return out
        m = None


def reply_to(kc, mid, channel="shell", timeout=5):
    get = {"shell": kc.get_shell_msg, "control": kc.get_control_msg,
           "stdin": kc.get_stdin_msg}[channel]
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("no %s reply to %s" % (channel, mid))
        m = get(timeout=left)
        if m["parent_header"].get("msg_id") == mid:
            return m


def run(kc, code, allow_stdin=False, timeout=10):
    """Execute code; return (reply, iopub messages up to idle)."""
    mid = kc.execute(code, allow_stdin=allow_stdin)
    reply = reply_to(kc, mid, timeout=timeout)
    return reply, drain_until_idle(kc, mid, timeout=timeout)


def kinds(msgs):
    out = []
    for m in msgs:
        if m["msg_type"] == "status":
            out.append(m["content"]["execution_state"])
        else:
            out.append(m["msg_type"])
    return out


def streams(msgs, name="stdout"):
    return "".join(m["content"]["text"] for m in msgs
                   if m["msg_type"] == "stream"
                   and m["content"]["name"] == name)


def eq(a, b, what=""):
    if a != b:
        raise AssertionError("%s: %r != %r" % (what, a, b))


def ok(cond, what):
    if not cond:
        raise AssertionError(what)


def raw_iopub(fk, kc):
    """A raw SUB socket on iopub, subscribed (checked with a status)."""
    sub = fk.raw(zmq.SUB, "iopub_port")
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    for _ in range(20):
        kc.kernel_info()
        kc.get_shell_msg(timeout=5)
        if sub.poll(500):
            while sub.poll(200):
                sub.recv_multipart()
            return sub
    raise AssertionError("raw iopub never subscribed")


def raw_collect(sub, until, timeout=5):
    """Raw frame lists from sub until until(frames) is true."""
    got = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sub.poll(100):
            f = sub.recv_multipart()
            got.append(f)
            if until(f):
                return got
    raise AssertionError("raw iopub: condition never met (%d msgs)"
                         % len(got))


# ---- tests -------------------------------------------------------------

def test_kernel_info():
    with FK() as fk:
        kc = fk.client()
        mid = kc.kernel_info()
        r = reply_to(kc, mid)
        c = r["content"]
        eq(r["msg_type"], "kernel_info_reply", "type")
        eq(c["status"], "ok", "status")
        eq(c["protocol_version"], "5.3", "protocol_version")
        eq(c["implementation"], "fakekernel", "implementation")
        eq(c["language_info"]["name"], "fake", "language")
        eq(r["parent_header"]["msg_id"], mid, "parent")
        ok(r["header"]["session"] != kc.session.session,
           "kernel uses its own session id")
        eq(kinds(drain_until_idle(kc, mid)), ["busy", "idle"], "iopub")
        # The same on control.
        msg = kc.session.msg("kernel_info_request", {})
        kc.control_channel.send(msg)
        r = reply_to(kc, msg["header"]["msg_id"], "control")
        eq(r["content"]["implementation"], "fakekernel", "control reply")


def test_execute_print_result_error():
    with FK() as fk:
        kc = fk.client()
        r, io = run(kc, "print hello world\neprint oops\nresult 42")
        eq(r["content"]["status"], "ok", "status")
        eq(r["content"]["execution_count"], 1, "count")
        eq(kinds(io), ["busy", "execute_input", "stream", "stream",
                       "execute_result", "idle"], "order")
        eq(io[1]["content"]["code"],
           "print hello world\neprint oops\nresult 42", "execute_input")
        eq(streams(io), "hello world\n", "stdout")
        eq(streams(io, "stderr"), "oops\n", "stderr")
        eq(io[4]["content"]["data"], {"text/plain": "42"}, "result")
        eq(io[4]["content"]["execution_count"], 1, "result count")

        r, io = run(kc, "print before\nerror ValueError bad thing\n"
                        "print never")
        c = r["content"]
        eq(c["status"], "error", "status")
        eq((c["ename"], c["evalue"]), ("ValueError", "bad thing"), "error")
        eq(c["execution_count"], 2, "count")
        eq(kinds(io), ["busy", "execute_input", "stream", "error", "idle"],
           "order")
        eq(io[3]["content"]["ename"], "ValueError", "iopub error")
        eq(streams(io), "before\n", "stdout stops at the error")

        r, io = run(kc, "display image/png iVBORw0KGgo=\n"
                        "display application/json {\"a\": 1}")
        dd = [m["content"]["data"] for m in io
              if m["msg_type"] == "display_data"]
        eq(dd, [{"image/png": "iVBORw0KGgo="}, {"application/json":
                                               {"a": 1}}], "display")
        eq(r["content"]["execution_count"], 3, "count")

        r, io = run(kc, "frobnicate")
        eq(r["content"]["ename"], "FakeSyntaxError", "unknown command")


def test_sigint_interrupts_sleep():
    with FK() as fk:
        kc = fk.client()
        mid = kc.execute("print start\nsleep 10\nprint never")
        # Wait until it is running (its stdout arrived), then SIGINT.
        deadline = time.monotonic() + 5
        seen = []
        while "start\n" not in streams(seen):
            ok(time.monotonic() < deadline, "execution never started")
            try:
                m = kc.get_iopub_msg(timeout=0.2)
            except queue.Empty:
                continue
            if m["parent_header"].get("msg_id") == mid:
                seen.append(m)
        time.sleep(0.2)
        t0 = time.monotonic()
        os.kill(fk.pid, signal.SIGINT)
        r = reply_to(kc, mid, timeout=1)
        dt = time.monotonic() - t0
        ok(dt < 1, "reply took %.2fs" % dt)
        eq(r["content"]["status"], "error", "status")
        eq(r["content"]["ename"], "KeyboardInterrupt", "ename")
        io = seen + drain_until_idle(kc, mid)
        ok("never" not in streams(io), "ran past the interrupt")
        ok("error" in kinds(io), "error on iopub")
        # Still usable, and SIGINT while idle is harmless.
        os.kill(fk.pid, signal.SIGINT)
        time.sleep(0.2)
        r, io = run(kc, "print again")
        eq(streams(io), "again\n", "after interrupt")
        eq(fk.proc.poll(), None, "still running")


def test_interrupt_request_on_control():
    with FK() as fk:
        kc = fk.client()
        mid = kc.execute("sleep 10")
        time.sleep(0.5)
        msg = kc.session.msg("interrupt_request", {})
        kc.control_channel.send(msg)
        t0 = time.monotonic()
        ir = reply_to(kc, msg["header"]["msg_id"], "control", timeout=2)
        eq(ir["msg_type"], "interrupt_reply", "type")
        r = reply_to(kc, mid, timeout=1)
        ok(time.monotonic() - t0 < 1, "too slow")
        eq(r["content"]["ename"], "KeyboardInterrupt", "ename")


def test_control_while_executing():
    with FK() as fk:
        kc = fk.client()
        # An interrupt reaches an input() wait, too.
        mid = kc.execute("input wait", allow_stdin=True)
        reply_to(kc, mid, "stdin")
        os.kill(fk.pid, signal.SIGINT)
        r = reply_to(kc, mid, timeout=1)
        eq(r["content"]["ename"], "KeyboardInterrupt", "input interrupted")
        # kernel_info on control is answered mid-sleep; shutdown ends it.
        mid = kc.execute("sleep 10")
        time.sleep(0.3)
        msg = kc.session.msg("kernel_info_request", {})
        kc.control_channel.send(msg)
        reply_to(kc, msg["header"]["msg_id"], "control", timeout=1)
        sid = kc.shutdown()
        reply_to(kc, sid, "control", timeout=1)
        eq(fk.wait(2), 0, "exit status")


def test_shutdown():
    with FK() as fk:
        kc = fk.client()
        mid = kc.shutdown()
        r = reply_to(kc, mid, "control")
        eq(r["msg_type"], "shutdown_reply", "type")
        eq(r["content"]["status"], "ok", "status")
        eq(fk.wait(5), 0, "exit status")
    with FK() as fk:        # on shell, too
        kc = fk.client()
        msg = kc.session.msg("shutdown_request", {"restart": True})
        kc.shell_channel.send(msg)
        r = reply_to(kc, msg["header"]["msg_id"], "shell")
        eq(r["content"]["restart"], True, "restart echoed")
        eq(fk.wait(5), 0, "exit status")


def test_input():
    with FK() as fk:
        kc = fk.client()
        mid = kc.execute("input your name? ", allow_stdin=True)
        req = reply_to(kc, mid, "stdin")
        eq(req["msg_type"], "input_request", "type")
        eq(req["content"]["prompt"], "your name? ", "prompt")
        kc.input("bob")
        r = reply_to(kc, mid)
        eq(r["content"]["status"], "ok", "status")
        eq(streams(drain_until_idle(kc, mid)), "bob\n", "echo")
        r, io = run(kc, "input x", allow_stdin=False)
        eq(r["content"]["ename"], "StdinNotImplementedError", "no stdin")


def test_noidle_idlefirst():
    with FK() as fk:
        kc = fk.client()
        mid = kc.execute("noidle")
        r = reply_to(kc, mid)
        eq(r["content"]["status"], "ok", "status")
        got = []
        deadline = time.monotonic() + 1
        while time.monotonic() < deadline:
            try:
                got.append(kc.get_iopub_msg(timeout=0.1))
            except queue.Empty:
                pass
        eq(kinds(got), ["busy", "execute_input"], "no idle")

        mid = kc.execute("idlefirst")
        r = reply_to(kc, mid)
        io = drain_until_idle(kc, mid)
        eq(kinds(io), ["busy", "execute_input", "idle"], "idle first")
        m = kc.get_iopub_msg(timeout=2)
        eq(m["content"].get("text"), "between-idle-and-reply\n",
           "stream after idle")


def test_flood_big():
    with FK() as fk:
        kc = fk.client()
        r, io = run(kc, "flood 500 100\nbig 1000000", timeout=20)
        ss = [m["content"]["text"] for m in io if m["msg_type"] == "stream"]
        eq(len(ss), 501, "stream count")
        ok(all(len(s) == 100 for s in ss[:500]), "flood sizes")
        eq(len(ss[500]), 1000000, "big size")


def test_malformed_frames():
    with FK() as fk:
        kc = fk.client()
        sub = raw_iopub(fk, kc)
        sess = fk.session()
        kc.execute("badsig\nnodelim\nbadutf8\nprint end")
        got = raw_collect(sub, lambda f: b'"end\\n"' in f[-1])
        texts = []
        for f in got:
            if b"<IDS|MSG>" not in f:
                ok(b'"nodelim\\n"' in f[-1], "only nodelim lacks delimiter")
                texts.append("NODELIM")
                continue
            _, rest = sess.feed_identities(f)
            try:
                m = sess.deserialize(rest)
            except ValueError as e:
                ok("Invalid Signature" in str(e), str(e))
                ok(b'"badsig\\n"' in rest[4], "only badsig is badly signed")
                texts.append("BADSIG")
                continue
            if m["msg_type"] != "stream":
                continue
            try:
                rest[4].decode("utf-8")
            except UnicodeDecodeError:
                ok(b"bad-bytes:\xff\xfe" in rest[4], "raw bytes")
                texts.append("BADBYTES")
                continue
            if b"\\udcff" in rest[4]:
                eq(m["content"]["text"], "bad-surrogate:\udcff\n", "escape")
                texts.append("SURROGATE")
                continue
            texts.append(m["content"]["text"])
        eq(texts, ["BADSIG", "after-badsig\n", "NODELIM", "after-nodelim\n",
                   "SURROGATE", "BADBYTES", "end\n"], "sequence")


def test_incoming_signatures():
    with FK() as fk:
        fk.client()     # up and ready
        dealer = fk.raw(zmq.DEALER, "shell_port")
        sess = fk.session()
        bad = sess.msg("kernel_info_request", {})
        frames = sess.serialize(bad)
        frames[frames.index(b"<IDS|MSG>") + 1] = b"0" * 64
        dealer.send_multipart(frames)
        ok(not dealer.poll(1000), "answered a badly signed request")
        good = sess.msg("kernel_info_request", {})
        dealer.send_multipart(sess.serialize(good))
        ok(dealer.poll(5000), "no answer to a good request")
        _, rest = sess.feed_identities(dealer.recv_multipart())
        r = sess.deserialize(rest)
        eq(r["parent_header"]["msg_id"], good["header"]["msg_id"], "parent")
        ok("bad signature" in fk.stderr(), "drop not logged")


def test_no_key():
    with FK(key=b"") as fk:
        kc = fk.client()
        r, io = run(kc, "print unsigned")
        eq(streams(io), "unsigned\n", "stdout")
        eq(io[0]["header"].get("msg_type"), "status", "status first")


def test_ipc_transport():
    d = tempfile.mkdtemp(prefix="fakekernel-ipc-")
    try:
        cf, info = write_connection_file(
            os.path.join(d, "k.json"), ip=os.path.join(d, "kernel"),
            transport="ipc", key=b"secret")
        proc = subprocess.Popen([PYTHON, KERNEL, "-f", cf],
                                stdin=subprocess.DEVNULL)
        try:
            kc = BlockingKernelClient(connection_file=cf)
            kc.load_connection_file()
            kc.start_channels()
            try:
                kc.wait_for_ready(timeout=10)
                warm_up(kc)
                r, io = run(kc, "print over ipc")
                eq(streams(io), "over ipc\n", "stdout")
                ok(os.path.exists(os.path.join(d, "kernel-%d"
                                               % info["shell_port"])),
                   "ipc endpoint name")
            finally:
                kc.stop_channels()
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(5)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_die_and_kill():
    with FK() as fk:
        kc = fk.client()
        mid = kc.execute("print bye\ndie 7")
        eq(fk.wait(5), 7, "die status")
        got = []
        deadline = time.monotonic() + 1
        while time.monotonic() < deadline:
            try:
                got.append(kc.get_iopub_msg(timeout=0.1))
            except queue.Empty:
                pass
        eq(kinds([m for m in got if m["parent_header"].get("msg_id") == mid]),
           ["busy", "execute_input", "stream"], "output before death")
    for sig, code in (("SIGKILL", "kill SIGKILL"), ("SIGTERM", "kill TERM"),
                      ("SIGSEGV", "kill 11")):
        with FK() as fk:
            kc = fk.client()
            kc.execute(code)
            eq(fk.wait(5), -getattr(signal, sig), code)


def test_heartbeat():
    for flags, echoes in (((), True), (("--no-heartbeat",), False)):
        with FK(*flags) as fk:
            kc = fk.client(ready=False)
            mid = kc.kernel_info()      # proves it is up
            reply_to(kc, mid, timeout=10)
            hb = fk.raw(zmq.REQ, "hb_port")
            hb.send(b"ping")
            if echoes:
                ok(hb.poll(2000), "no echo")
                eq(hb.recv(), b"ping", "echo")
            else:
                ok(not hb.poll(1000), "echoed with --no-heartbeat")


def test_startup_flags():
    with FK("--exit-at-start", "3", "--stderr-lines", "2") as fk:
        eq(fk.wait(5), 3, "exit status")
        lines = fk.stderr().splitlines()
        eq(len(lines), 3, "stderr lines: %r" % lines)
        eq(lines[-1], "fakekernel: exiting with 3", "last line")
    with FK("--no-kernel-info") as fk:
        kc = fk.client(ready=False)
        kc.kernel_info()
        try:
            kc.get_shell_msg(timeout=1.5)
            raise AssertionError("kernel_info answered")
        except queue.Empty:
            pass
        r, io = run(kc, "print still works")
        eq(r["content"]["status"], "ok", "execute still works")
    with FK(env={"FAKEKERNEL_FLAGS": "--stderr-lines 4 --slow-start 1"}) \
            as fk:
        t0 = time.monotonic()
        kc = fk.client(ready=False)
        mid = kc.kernel_info()
        reply_to(kc, mid, timeout=10)
        ok(time.monotonic() - t0 >= 0.9, "slow start was not slow")
        eq(len(fk.stderr().splitlines()), 4, "stderr lines")


def test_kernelspec_template():
    import json
    with open(os.path.join(HERE, "kernel.json")) as f:
        spec = json.load(f)
    eq(spec["argv"][1], "{resource_dir}/fakekernel.py", "argv")
    eq(spec["interrupt_mode"], "signal", "interrupt_mode")
    eq(spec["language"], "fake", "language")


def test_kernelspec_with_kernel_manager():
    """Installed as a kernelspec, launched and managed by jupyter_client."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    d = tempfile.mkdtemp(prefix="fakekernel-spec-")
    km = None
    try:
        res = os.path.join(d, "kernels", "fake")
        os.makedirs(os.path.dirname(res))
        shutil.copytree(HERE, res, ignore=shutil.ignore_patterns(
            "__pycache__", "*.pyc", "selftest.py"))
        ksm = KernelSpecManager(kernel_dirs=[os.path.join(d, "kernels")])
        spec = ksm.get_kernel_spec("fake")
        eq(os.path.realpath(spec.resource_dir), os.path.realpath(res),
           "resource_dir")
        km = KernelManager(kernel_name="fake", kernel_spec_manager=ksm)
        km.start_kernel(cwd=d)
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=10)
            warm_up(kc)
            r, io = run(kc, "print managed")
            eq(streams(io), "managed\n", "stdout")
            mid = kc.execute("sleep 10")
            time.sleep(0.5)
            km.interrupt_kernel()       # SIGINT, interrupt_mode "signal"
            r = reply_to(kc, mid, timeout=2)
            eq(r["content"]["ename"], "KeyboardInterrupt", "interrupted")
        finally:
            kc.stop_channels()
        km.shutdown_kernel(now=False)
        eq(km.is_alive(), False, "gone after shutdown")
    finally:
        if km is not None and km.has_kernel:
            km.shutdown_kernel(now=True)
        shutil.rmtree(d, ignore_errors=True)


# ---- runner ------------------------------------------------------------

def on_alarm(signum, frame):
    raise Timeout("test took longer than %d s" % LIMIT)


def main():
    filt = sys.argv[1] if len(sys.argv) > 1 else ""
    passed = failed = 0
    signal.signal(signal.SIGALRM, on_alarm)
    for name, fn in sorted(globals().items()):
        if not name.startswith("test_") or filt not in name:
            continue
        t0 = time.monotonic()
        signal.alarm(LIMIT)
        try:
            fn()
            good = True
        except BaseException:  # noqa: B902 - report everything
            good = False
            err = traceback.format_exc()
        finally:
            signal.alarm(0)
        dt = time.monotonic() - t0
        if good:
            passed += 1
            print("PASS %s (%.2fs)" % (name, dt), flush=True)
        else:
            failed += 1
            print("FAIL %s (%.2fs)\n%s" % (name, dt, err), flush=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
