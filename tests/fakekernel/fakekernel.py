#!/usr/bin/python3
"""fakekernel -- a scriptable Jupyter kernel for execd's tests.

It speaks the Jupyter messaging protocol 5.3 over ZeroMQ, written from the
specification with nothing but the standard library and pyzmq, so that it
shares no code (and no bugs) with execd's own protocol implementation.

The "code" of an execute_request is a tiny command language, one command
per line (blank lines and lines starting with '#' are skipped):

    print TEXT            stream stdout "TEXT\\n"
    eprint TEXT           stream stderr "TEXT\\n"
    result TEXT           execute_result {"text/plain": TEXT}
    display MIME DATA     display_data {MIME: DATA} (DATA passed as is, so
                          base64 for binary types; parsed for */json)
    error ENAME EVALUE    error on iopub, execute_reply status "error"
    sleep SECONDS         interruptible sleep
    flood N SIZE          N stdout stream messages of SIZE bytes each
    big BYTES             one stdout stream message of BYTES bytes
    badutf8               two malformed stream messages (see cmd_badutf8)
    badsig                a stream with a wrong signature ("badsig\\n"),
                          then a good one "after-badsig\\n"
    nodelim               a stream without the <IDS|MSG> frame
                          ("nodelim\\n"), then a good one "after-nodelim\\n"
    die CODE              exit with CODE now (after busy, before the reply)
    kill SIGNAL           kill ourselves with SIGNAL (name or number)
    noidle                the execute_reply is sent, the idle status never
    idlefirst             status idle, then a stdout stream
                          "between-idle-and-reply\\n", then (at the end of
                          the cell) the execute_reply
    noreply               status idle now, and no execute_reply, ever
    latereply SECONDS     status idle now, the execute_reply SECONDS later
                          (at the end of the cell), deaf to interrupts
    nointerrupt SECONDS   a sleep that interrupts do not end
    input PROMPT          input_request on stdin, echo the value on stdout;
                          StdinNotImplementedError if allow_stdin is false

Start-up fault modes: --no-kernel-info, --lose-first-info,
--deaf-first-start MARKER, --exit-at-start CODE,
--no-heartbeat, --stderr-lines N, --slow-start SECONDS.  Extra flags may
also be given in the environment variable FAKEKERNEL_FLAGS.
"""
import argparse
import datetime
import hashlib
import hmac
import json
import os
import shlex
import signal
import sys
import threading
import time
import uuid

import zmq

DELIM = b"<IDS|MSG>"
PROTOCOL_VERSION = "5.3"
POLL_MS = 50            # granularity of interruptible waits


def log(fmt, *args):
    sys.stderr.write("fakekernel: " + (fmt % args if args else fmt) + "\n")
    sys.stderr.flush()


def jdump(obj):
    """Compact UTF-8 JSON, as ipykernel sends it."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


class KernelExit(Exception):
    """Leave the kernel with an exit status (after flushing sockets)."""

    def __init__(self, code):
        super().__init__(code)
        self.code = code


class Interrupted(Exception):
    """The running execution was interrupted (SIGINT or interrupt_request)."""


class CellError(Exception):
    """The cell failed: becomes an error message and an error reply."""

    def __init__(self, ename, evalue, traceback=None):
        super().__init__(ename, evalue)
        self.ename = ename
        self.evalue = evalue
        self.traceback = traceback or ["%s: %s" % (ename, evalue)]


class Request:
    """One request being handled: where it came from and what is owed."""

    def __init__(self, sock, idents, msg):
        self.sock = sock
        self.idents = idents
        self.msg = msg
        self.header = msg["header"]
        self.content = msg["content"]
        self.idle_done = False      # idle already published (idlefirst)
        self.no_idle = False        # never publish idle (noidle)
        self.no_reply = False       # never send the reply (noreply)


class Kernel:
    def __init__(self, conn, opts):
        self.opts = opts
        self.session = str(uuid.uuid4())
        self.kernel_id = self.session
        self.execution_count = 0
        self.interrupted = False
        self.executing = False

        self.key = conn.get("key", "").encode("utf-8")
        scheme = conn.get("signature_scheme", "hmac-sha256")
        if not scheme.startswith("hmac-"):
            raise ValueError("unsupported signature_scheme %r" % scheme)
        self.digest = getattr(hashlib, scheme[5:], None)
        if self.digest is None:
            raise ValueError("unsupported signature_scheme %r" % scheme)

        transport = conn.get("transport", "tcp")
        ip = conn.get("ip", "127.0.0.1")

        def addr(name):
            port = conn[name]
            if transport == "ipc":
                return "ipc://%s-%s" % (ip, port)
            if transport != "tcp":
                raise ValueError("unsupported transport %r" % transport)
            return "tcp://%s:%s" % (ip, port)

        self.ctx = zmq.Context()
        self.shell = self._bind(zmq.ROUTER, addr("shell_port"))
        self.control = self._bind(zmq.ROUTER, addr("control_port"))
        self.stdin = self._bind(zmq.ROUTER, addr("stdin_port"))
        self.iopub = self._bind(zmq.PUB, addr("iopub_port"),
                                hwm=opts.iopub_hwm)
        hb = self._bind(zmq.REP, addr("hb_port"))
        self.hb_stop = threading.Event()
        self.hb_thread = threading.Thread(
            target=self._heartbeat, args=(hb, not opts.no_heartbeat),
            name="heartbeat", daemon=True)
        self.hb_thread.start()

    def _bind(self, kind, address, hwm=None):
        s = self.ctx.socket(kind)
        s.linger = 1000
        if hwm is not None:
            s.sndhwm = hwm
        s.bind(address)
        return s

    # The heartbeat socket belongs to this thread alone from here on.
    def _heartbeat(self, sock, echo):
        try:
            while not self.hb_stop.is_set():
                if not echo:
                    # Bound, connectable, silent: pings are never read.
                    self.hb_stop.wait(0.1)
                    continue
                if sock.poll(100):
                    sock.send_multipart(sock.recv_multipart())
        except zmq.ZMQError as e:
            log("heartbeat: %s", e)
        finally:
            sock.close(linger=0)

    # ---- wire ---------------------------------------------------------

    def sign(self, parts):
        if not self.key:
            return b""
        h = hmac.new(self.key, digestmod=self.digest)
        for p in parts:
            h.update(p)
        return h.hexdigest().encode("ascii")

    def recv(self, sock):
        """One message from sock (non-blocking), or None if it was dropped."""
        try:
            frames = sock.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            return None, None
        try:
            i = frames.index(DELIM)
        except ValueError:
            log("dropped a message without <IDS|MSG>")
            return None, None
        idents, rest = frames[:i], frames[i + 1:]
        if len(rest) < 5:
            log("dropped a message with %d frames after <IDS|MSG>", len(rest))
            return None, None
        sig, parts = rest[0], rest[1:5]
        if self.key and not hmac.compare_digest(sig, self.sign(parts)):
            log("dropped a message with a bad signature")
            return None, None
        try:
            header, parent, metadata, content = (json.loads(p) for p in parts)
        except ValueError as e:
            log("dropped a message with bad JSON: %s", e)
            return None, None
        if not all(isinstance(x, dict)
                   for x in (header, parent, metadata, content)):
            log("dropped a message whose parts are not all JSON objects")
            return None, None
        msg = {"header": header, "parent_header": parent,
               "metadata": metadata, "content": content,
               "buffers": rest[5:]}
        return idents, msg

    def header(self, msg_type):
        return {"msg_id": uuid.uuid4().hex, "session": self.session,
                "username": "fakekernel", "date": now_iso(),
                "msg_type": msg_type, "version": PROTOCOL_VERSION}

    def send(self, sock, msg_type, content, parent=None, idents=None,
             metadata=None, raw_content=None, bad_sig=False, no_delim=False):
        """Sign and send one message.

        raw_content: bytes used verbatim as the content frame (for
        deliberately malformed JSON).  bad_sig: a well-formed but wrong
        signature.  no_delim: leave out the <IDS|MSG> frame.
        """
        parts = [jdump(self.header(msg_type)), jdump(parent or {}),
                 jdump(metadata or {}),
                 raw_content if raw_content is not None else jdump(content)]
        sig = self.sign(parts)
        if bad_sig:
            h = hmac.new(b"not-the-key:" + self.key, digestmod=self.digest)
            for p in parts:
                h.update(p)
            sig = h.hexdigest().encode("ascii")
        if idents is None:
            idents = [("kernel.%s.%s" % (self.kernel_id, msg_type))
                      .encode("utf-8")]
        frames = list(idents)
        if not no_delim:
            frames.append(DELIM)
        frames.append(sig)
        frames.extend(parts)
        sock.send_multipart(frames)

    def reply(self, req, msg_type, content, metadata=None):
        self.send(req.sock, msg_type, content, parent=req.header,
                  idents=req.idents, metadata=metadata)

    def publish(self, msg_type, content, parent, **kw):
        self.send(self.iopub, msg_type, content, parent=parent, **kw)

    def status(self, state, parent):
        self.publish("status", {"execution_state": state}, parent)

    def stream(self, req, name, text):
        self.publish("stream", {"name": name, "text": text}, req.header)

    # ---- dispatch -----------------------------------------------------

    def on_sigint(self, signum, frame):
        self.interrupted = True

    def dispatch(self, sock, channel):
        idents, msg = self.recv(sock)
        if msg is None:
            return
        req = Request(sock, idents, msg)
        msg_type = req.header.get("msg_type")
        if msg_type == "kernel_info_request" and self.opts.no_kernel_info:
            log("ignoring kernel_info_request (--no-kernel-info)")
            return
        if msg_type == "kernel_info_request" and self.opts.lose_first_info:
            # As a kernel still binding its sockets may (tslab does).
            self.opts.lose_first_info = False
            log("losing the first kernel_info_request")
            return
        handlers = {
            "kernel_info_request": self.do_kernel_info,
            "shutdown_request": self.do_shutdown,
            "is_complete_request": self.do_is_complete,
            "complete_request": self.do_complete,
            "inspect_request": self.do_inspect,
            "history_request": self.do_history,
            "comm_info_request": self.do_comm_info,
        }
        if channel == "shell":
            handlers["execute_request"] = self.do_execute
        else:
            handlers["interrupt_request"] = self.do_interrupt
        handler = handlers.get(msg_type)
        self.status("busy", req.header)
        if handler is None:
            log("unknown %s message type %r", channel, msg_type)
        else:
            handler(req)
        if not req.idle_done and not req.no_idle:
            self.status("idle", req.header)

    def drain_control(self, timeout_ms=0):
        """Handle what is waiting on control (used while executing, too)."""
        if self.control.poll(timeout_ms):
            for _ in range(100):
                if not self.control.poll(0):
                    break
                self.dispatch(self.control, "control")

    def serve(self):
        poller = zmq.Poller()
        poller.register(self.control, zmq.POLLIN)
        poller.register(self.shell, zmq.POLLIN)
        poller.register(self.stdin, zmq.POLLIN)
        self.status("starting", {})
        while True:
            ready = dict(poller.poll(200))
            if self.control in ready:
                self.drain_control()
            if self.stdin in ready:
                # Nothing asked for input: discard stray stdin messages.
                self.recv(self.stdin)
            if self.shell in ready:
                self.dispatch(self.shell, "shell")

    # ---- handlers -----------------------------------------------------

    def do_kernel_info(self, req):
        self.reply(req, "kernel_info_reply", {
            "status": "ok",
            "protocol_version": PROTOCOL_VERSION,
            "implementation": "fakekernel",
            "implementation_version": "1.0",
            "language_info": {"name": "fake", "version": "1.0",
                              "mimetype": "text/plain",
                              "file_extension": ".fake"},
            "banner": "fakekernel: a scriptable kernel for tests",
            "help_links": [],
            "debugger": False,
        })

    def do_shutdown(self, req):
        restart = bool(req.content.get("restart", False))
        content = {"status": "ok", "restart": restart}
        self.reply(req, "shutdown_reply", content)
        self.publish("shutdown_reply", content, req.header)
        self.status("idle", req.header)
        req.idle_done = True
        raise KernelExit(0)

    def do_interrupt(self, req):
        if self.executing:
            self.interrupted = True
        self.reply(req, "interrupt_reply", {"status": "ok"})

    def do_is_complete(self, req):
        self.reply(req, "is_complete_reply", {"status": "complete"})

    def do_complete(self, req):
        pos = req.content.get("cursor_pos", 0)
        self.reply(req, "complete_reply", {
            "status": "ok", "matches": [], "cursor_start": pos,
            "cursor_end": pos, "metadata": {}})

    def do_inspect(self, req):
        self.reply(req, "inspect_reply", {
            "status": "ok", "found": False, "data": {}, "metadata": {}})

    def do_history(self, req):
        self.reply(req, "history_reply", {"status": "ok", "history": []})

    def do_comm_info(self, req):
        self.reply(req, "comm_info_reply", {"status": "ok", "comms": {}})

    def do_execute(self, req):
        c = req.content
        code = c.get("code", "")
        silent = bool(c.get("silent", False))
        store_history = bool(c.get("store_history", not silent))
        if silent:
            store_history = False
        if store_history:
            self.execution_count += 1
        if not silent:
            self.publish("execute_input",
                         {"code": code,
                          "execution_count": self.execution_count},
                         req.header)
        started = now_iso()
        self.interrupted = False
        self.executing = True
        err = None
        try:
            for line in code.splitlines():
                self.check_interrupt()
                self.run_line(req, line)
            self.check_interrupt()
        except Interrupted:
            err = CellError("KeyboardInterrupt", "",
                            ["KeyboardInterrupt: interrupted"])
        except CellError as e:
            err = e
        finally:
            self.executing = False
            self.interrupted = False
        if err is None:
            content = {"status": "ok",
                       "execution_count": self.execution_count,
                       "payload": [], "user_expressions": {}}
        else:
            self.publish("error", {"ename": err.ename, "evalue": err.evalue,
                                   "traceback": err.traceback}, req.header)
            content = {"status": "error",
                       "execution_count": self.execution_count,
                       "ename": err.ename, "evalue": err.evalue,
                       "traceback": err.traceback}
        if req.no_reply:
            log("no execute_reply for this cell (noreply)")
            return
        self.reply(req, "execute_reply", content,
                   metadata={"started": started, "status": content["status"],
                             "dependencies_met": True,
                             "engine": self.kernel_id})

    # ---- the command language -----------------------------------------

    def check_interrupt(self):
        if self.interrupted:
            raise Interrupted()

    def run_line(self, req, line):
        s = line.lstrip()
        if not s or s.startswith("#"):
            return
        cmd, _, arg = s.partition(" ")
        fn = getattr(self, "cmd_" + cmd, None)
        if fn is None:
            raise CellError("FakeSyntaxError", "unknown command %r" % cmd)
        fn(req, arg)

    @staticmethod
    def _int(arg, what):
        try:
            return int(arg.strip())
        except ValueError:
            raise CellError("ValueError", "%s: not an integer: %r"
                            % (what, arg)) from None

    @staticmethod
    def _payload(n):
        """Exactly n bytes of ASCII text, ending in a newline if n > 0."""
        return "x" * (n - 1) + "\n" if n > 0 else ""

    def cmd_print(self, req, arg):
        self.stream(req, "stdout", arg + "\n")

    def cmd_eprint(self, req, arg):
        self.stream(req, "stderr", arg + "\n")

    def cmd_result(self, req, arg):
        self.publish("execute_result", {
            "execution_count": self.execution_count,
            "data": {"text/plain": arg}, "metadata": {}}, req.header)

    def cmd_display(self, req, arg):
        mime, _, data = arg.partition(" ")
        if not mime:
            raise CellError("ValueError", "display: missing MIME type")
        value = data
        if mime.endswith("json"):
            try:
                value = json.loads(data)
            except ValueError:
                pass
        self.publish("display_data", {"data": {mime: value}, "metadata": {},
                                      "transient": {}}, req.header)

    def cmd_error(self, req, arg):
        ename, _, evalue = arg.strip().partition(" ")
        raise CellError(ename or "Error", evalue)

    def cmd_sleep(self, req, arg):
        try:
            secs = float(arg.strip())
        except ValueError:
            raise CellError("ValueError", "sleep: bad number %r" % arg) \
                from None
        deadline = time.monotonic() + secs
        while True:
            self.check_interrupt()
            left = deadline - time.monotonic()
            if left <= 0:
                break
            # Control stays live while we "run": interrupt, shutdown, ...
            self.drain_control(int(min(left * 1000, POLL_MS)) + 1)
        self.check_interrupt()

    def cmd_flood(self, req, arg):
        words = arg.split()
        if len(words) != 2:
            raise CellError("ValueError", "usage: flood N SIZE")
        n = self._int(words[0], "flood N")
        text = self._payload(self._int(words[1], "flood SIZE"))
        for i in range(n):
            if i % 100 == 0:
                self.drain_control()
            self.check_interrupt()
            self.stream(req, "stdout", text)

    def cmd_big(self, req, arg):
        self.stream(req, "stdout", self._payload(self._int(arg, "big BYTES")))

    def cmd_badutf8(self, req, arg):
        # Variant 1 -- valid UTF-8, invalid Unicode: the JSON text holds the
        # escape sequence \udcff, a lone surrogate once decoded.  The bytes
        # on the wire are plain ASCII.
        content = json.dumps({"name": "stdout",
                              "text": "bad-surrogate:\udcff\n"},
                             ensure_ascii=True).encode("ascii")
        assert b"\\udcff" in content
        self.publish("stream", None, req.header, raw_content=content)
        # Variant 2 -- invalid UTF-8: raw bytes 0xff 0xfe inside the JSON
        # string (correctly signed, so only the decoder can reject it).
        content = b'{"name":"stdout","text":"bad-bytes:\xff\xfe\\n"}'
        self.publish("stream", None, req.header, raw_content=content)

    def cmd_badsig(self, req, arg):
        self.publish("stream", {"name": "stdout", "text": "badsig\n"},
                     req.header, bad_sig=True)
        self.stream(req, "stdout", "after-badsig\n")

    def cmd_nodelim(self, req, arg):
        self.publish("stream", {"name": "stdout", "text": "nodelim\n"},
                     req.header, no_delim=True)
        self.stream(req, "stdout", "after-nodelim\n")

    def cmd_die(self, req, arg):
        raise KernelExit(self._int(arg, "die CODE"))

    def cmd_kill(self, req, arg):
        name = arg.strip().upper()
        try:
            sig = int(name)
        except ValueError:
            if not name.startswith("SIG"):
                name = "SIG" + name
            sig = getattr(signal, name, None)
            if not isinstance(sig, int):
                raise CellError("ValueError", "kill: unknown signal %r"
                                % arg) from None
        stops_or_ignored = {signal.SIGSTOP, signal.SIGTSTP, signal.SIGTTIN,
                            signal.SIGTTOU, signal.SIGCONT, signal.SIGCHLD,
                            signal.SIGURG, signal.SIGWINCH}
        if sig in stops_or_ignored:
            # Not fatal: give the I/O thread a moment, then carry on.
            time.sleep(0.1)
            os.kill(os.getpid(), sig)
            return
        # Fatal: make sure busy/execute_input/output left, then die by it.
        self.close()
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass                # SIGKILL cannot be caught anyway
        sys.stderr.flush()
        os.kill(os.getpid(), sig)
        time.sleep(1)
        os._exit(128 + sig)      # only if the signal did not kill us

    def cmd_noidle(self, req, arg):
        req.no_idle = True

    def cmd_idlefirst(self, req, arg):
        self.status("idle", req.header)
        req.idle_done = True
        self.stream(req, "stdout", "between-idle-and-reply\n")

    def cmd_noreply(self, req, arg):
        self.status("idle", req.header)
        req.idle_done = True
        req.no_reply = True

    def cmd_latereply(self, req, arg):
        self.status("idle", req.header)
        req.idle_done = True
        self.deaf_wait(arg)

    def cmd_nointerrupt(self, req, arg):
        self.deaf_wait(arg)

    def deaf_wait(self, arg):
        """Wait, serving control, forgetting every interrupt that comes."""
        try:
            secs = float(arg.strip())
        except ValueError:
            raise CellError("ValueError", "bad number %r" % arg) from None
        deadline = time.monotonic() + secs
        while True:
            self.interrupted = False
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.drain_control(int(min(left * 1000, POLL_MS)) + 1)
        self.interrupted = False

    def cmd_input(self, req, arg):
        if not req.content.get("allow_stdin", False):
            raise CellError("StdinNotImplementedError",
                            "raw_input was called, but this frontend does "
                            "not support input requests.")
        self.send(self.stdin, "input_request",
                  {"prompt": arg, "password": False},
                  parent=req.header, idents=req.idents)
        while True:
            self.check_interrupt()
            self.drain_control()
            if not self.stdin.poll(POLL_MS):
                continue
            idents, msg = self.recv(self.stdin)
            if msg is None:
                continue
            if msg["header"].get("msg_type") != "input_reply":
                log("ignoring %r on stdin", msg["header"].get("msg_type"))
                continue
            value = msg["content"].get("value", "")
            self.stream(req, "stdout", "%s\n" % value)
            return

    # ---- teardown -----------------------------------------------------

    def close(self):
        """Flush what was sent (linger) and close everything."""
        self.hb_stop.set()
        self.hb_thread.join(2)
        for s in (self.shell, self.control, self.stdin, self.iopub):
            s.close(linger=1000)
        if not self.hb_thread.is_alive():
            self.ctx.term()


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="fakekernel.py",
        description="A scriptable Jupyter kernel for tests.")
    p.add_argument("-f", "--connection-file", dest="connection_file",
                   help="the kernel's connection file")
    p.add_argument("--no-kernel-info", action="store_true",
                   help="never answer kernel_info_request")
    p.add_argument("--lose-first-info", action="store_true",
                   help="drop the first kernel_info_request")
    p.add_argument("--deaf-first-start", metavar="MARKER",
                   help="if the file MARKER does not exist, create it and "
                        "never answer kernel_info_request (as a kernel "
                        "whose receive loop died at start); if it does, "
                        "start normally")
    p.add_argument("--exit-at-start", type=int, metavar="CODE",
                   help="say so on stderr and exit with CODE at start")
    p.add_argument("--no-heartbeat", action="store_true",
                   help="bind the heartbeat socket but never echo")
    p.add_argument("--stderr-lines", type=int, default=0, metavar="N",
                   help="write N lines to stderr at start")
    p.add_argument("--slow-start", type=float, default=0, metavar="SECONDS",
                   help="wait this long before binding any socket")
    p.add_argument("--iopub-hwm", type=int, default=0, metavar="N",
                   help="send high-water mark of iopub (0: unlimited, the "
                        "default; PUB drops messages above it)")
    extra = shlex.split(os.environ.get("FAKEKERNEL_FLAGS", ""))
    opts, unknown = p.parse_known_args(list(argv) + extra)
    if unknown:
        log("ignoring unknown arguments: %s", " ".join(unknown))
    return opts


def main(argv):
    opts = parse_args(argv)
    holder = {}

    def on_sigint(signum, frame):
        k = holder.get("kernel")
        if k is not None:
            k.on_sigint(signum, frame)
    # SIGINT interrupts an execution (interrupt_mode "signal"); when idle
    # it is ignored, as ipykernel does.
    signal.signal(signal.SIGINT, on_sigint)

    for i in range(opts.stderr_lines):
        log("stderr line %d of %d", i + 1, opts.stderr_lines)
    if opts.slow_start > 0:
        time.sleep(opts.slow_start)
    if opts.deaf_first_start is not None:
        try:
            os.close(os.open(opts.deaf_first_start,
                             os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            log("deaf this start: the marker was not there")
            opts.no_kernel_info = True
        except FileExistsError:
            pass
    if opts.exit_at_start is not None:
        log("exiting with %d", opts.exit_at_start)
        return opts.exit_at_start
    if not opts.connection_file:
        log("no connection file (-f PATH)")
        return 2
    try:
        with open(opts.connection_file, encoding="utf-8") as f:
            conn = json.load(f)
    except (OSError, ValueError) as e:
        log("cannot read connection file %s: %s", opts.connection_file, e)
        return 2
    try:
        kernel = Kernel(conn, opts)
    except (KeyError, ValueError, zmq.ZMQError) as e:
        log("cannot start: %s", e)
        return 1
    holder["kernel"] = kernel
    code = 0
    try:
        kernel.serve()
    except KernelExit as e:
        code = e.code
    kernel.close()
    return code


if __name__ == "__main__":
    rc = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)
