"""The computer-use API (/computer) and its MCP tools, on a real Xvfb.

Each test starts its own Xvfb on a display number the server picks
(-displayfd), and execd with DISPLAY naming it; both are stopped by pid.
Pixels are read back from the PNGs with a small decoder (zlib and the
five PNG filters), so nothing beyond Debian's Xvfb, xterm and
x11-xserver-utils is needed.
"""
import json
import os
import signal
import struct
import subprocess
import tempfile
import time
import zlib
import base64

from lib import Execd
from test_mcp import TOKEN, initialize, post


class Xvfb:
    """An X server on a free display; .display is ":N"."""

    def __init__(self, size="640x480", number=None):
        self.size = size
        self.number = number
        self.proc = None
        self.display = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        r, w = os.pipe()
        cmd = ["Xvfb", "-screen", "0", self.size + "x24", "-nolisten",
               "tcp", "-nolisten", "local", "-noreset"]
        if self.number is None:
            cmd += ["-displayfd", str(w)]
        else:
            cmd.insert(1, ":%d" % self.number)
        self.proc = subprocess.Popen(cmd, pass_fds=(w,),
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(w)
        if self.number is None:
            with os.fdopen(r) as f:
                line = f.readline().strip()
            assert line.isdigit(), "Xvfb did not report its display"
            self.number = int(line)
        else:
            os.close(r)
        self.display = ":%d" % self.number
        sock = "/tmp/.X11-unix/X%d" % self.number
        deadline = time.monotonic() + 15
        while not os.path.exists(sock):
            assert time.monotonic() < deadline, "Xvfb did not start"
            assert self.proc.poll() is None, "Xvfb exited"
            time.sleep(0.05)
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            self.proc.wait(10)

    def run(self, *cmd, **kw):
        env = dict(os.environ, DISPLAY=self.display)
        env.update(kw.pop("env", {}))
        return subprocess.Popen(list(cmd), env=env,
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, **kw)


def with_display(x):
    return Execd(env={"DISPLAY": x.display})


def stop_proc(p):
    if p.poll() is None:
        os.kill(p.pid, signal.SIGTERM)
        p.wait(10)


def png_decode(data):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:16]
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert (depth, ctype) == (8, 2), (depth, ctype)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), w * 3, [], None
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        up = prev or bytearray(stride)
        for i in range(stride):
            a = line[i - 3] if i >= 3 else 0
            b, c = up[i], (up[i - 3] if i >= 3 else 0)
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pr) & 255
        rows.append([tuple(line[i:i + 3]) for i in range(0, stride, 3)])
        prev = line
    return w, h, rows


def shot(d, query=""):
    st, h, data = d.request("GET", "/computer/screenshot" + query)
    assert st == 200, data
    assert h["content-type"] == "image/png"
    return png_decode(data)


def wait_for(fn, what, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.1)


def error(d, method, path, body=None, status=400):
    st, _, data = d.request(method, path, body=body)
    assert st == status, (path, body, st, data)
    v = json.loads(data)
    assert v["code"] and v["message"], v
    return v


def test_computer_screen_and_screenshot_pixels():
    with Xvfb("640x480") as x, with_display(x) as d:
        x.run("xsetroot", "-solid", "#ff8000").wait(10)
        st, v = d.get_json("/computer/screen")
        assert st == 200, v
        assert (v["width"], v["height"]) == (640, 480)
        assert 0 <= v["cursor"]["x"] < 640 and 0 <= v["cursor"]["y"] < 480
        assert v["display"] == x.display
        w, h, rows = shot(d)
        assert (w, h) == (640, 480)
        assert rows[5][5] == (255, 128, 0) and rows[470][630] == (255, 128, 0)
        w, h, rows = shot(d, "?x=10&y=20&width=30&height=40")
        assert (w, h) == (30, 40)
        assert all(p == (255, 128, 0) for r in rows for p in r)
        w, h, rows = shot(d, "?x=600&y=400")  # to the edges
        assert (w, h) == (40, 80)
        w, h, rows = shot(d, "?scale_width=320")
        assert (w, h) == (320, 240) and rows[100][100] == (255, 128, 0)
        w, h, _ = shot(d, "?scale_width=100&width=200&height=50")
        assert (w, h) == (100, 25)
        w, h, _ = shot(d, "?scale_width=5000")  # never upscaled
        assert (w, h) == (640, 480)
        for q in ("?x=600&width=100", "?y=480", "?x=640", "?width=0",
                  "?height=481", "?x=-1", "?x=abc", "?scale_width=0",
                  "?width=99999999"):
            error(d, "GET", "/computer/screenshot" + q)
        assert d.request("GET", "/ping")[0] == 200


def test_computer_windows_focus_and_a_drawn_window():
    with Xvfb("640x480") as x, with_display(x) as d:
        x.run("xsetroot", "-solid", "#000080").wait(10)
        term = x.run("xterm", "-bg", "#00ff00", "-fg", "#00ff00",
                     "-geometry", "40x10+100+80", "-title", "green-term",
                     "-e", "sleep", "60")
        try:
            def find():
                st, v = d.get_json("/computer/windows")
                assert st == 200, v
                ws = [w for w in v["windows"] if w["class"] == "XTerm"]
                return ws[0] if ws else None
            win = wait_for(find, "the xterm window")
            assert win["title"] == "green-term"
            # The inside of the window, within its border.
            assert 100 <= win["x"] <= 102 and 80 <= win["y"] <= 82, win
            assert win["width"] > 100 and win["height"] > 50
            cx = win["x"] + win["width"] // 2
            cy = win["y"] + win["height"] // 2
            wait_for(lambda: shot(d)[2][cy][cx] == (0, 255, 0),
                     "the xterm's green pixels")
            _, _, rows = shot(d)
            assert rows[10][10] == (0, 0, 128)
            st, _, body = d.request("POST", "/computer/windows/%d/focus"
                                    % win["id"])
            assert st == 200, body
            st, v = d.get_json("/computer/windows")
            assert [w["focused"] for w in v["windows"]
                    if w["id"] == win["id"]] == [True]
            st, _, body = d.request("POST", "/computer/windows/%s/focus"
                                    % hex(win["id"]))
            assert st == 200, body
            error(d, "POST", "/computer/windows/0x7ffffff0/focus",
                  status=404)
            for bad in ("abc", "0", "-1", "99999999999", "12x"):
                error(d, "POST", "/computer/windows/%s/focus" % bad)
        finally:
            stop_proc(term)


def test_computer_types_unicode_into_an_xterm():
    text = "Hello, wörld ☃ 日本語 ~|<>{}\nsecond line\ttab\n"
    with Xvfb("800x600") as x, with_display(x) as d, \
            tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "typed.txt")
        term = x.run("xterm", "-u8", "-geometry", "80x20+0+0", "-e",
                     "sh", "-c", "cat > " + out,
                     env={"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"})
        try:
            def find():
                st, v = d.get_json("/computer/windows")
                ws = [w for w in v["windows"] if w["class"] == "XTerm"]
                return ws[0] if ws else None
            win = wait_for(find, "the xterm window")
            wait_for(lambda: os.path.exists(out), "cat to start")
            st, _, body = d.request("POST", "/computer/windows/%d/focus"
                                    % win["id"])
            assert st == 200, body
            st, _, body = d.request("POST", "/computer/mouse", body={
                "action": "move", "x": win["x"] + 20, "y": win["y"] + 20})
            assert st == 200, body
            st, _, body = d.request("POST", "/computer/keyboard",
                                    body={"text": text})
            assert st == 200, body
            # Keys on the shifted level get Shift: "H", "exclam".
            st, _, body = d.request("POST", "/computer/keyboard",
                                    body={"keys": "H i exclam Return"})
            assert st == 200, body
            st, _, body = d.request("POST", "/computer/keyboard",
                                    body={"keys": "ctrl+d"})
            assert st == 200, body

            def done():
                with open(out, encoding="utf-8", errors="replace") as f:
                    got = f.read()
                return got if term.poll() is not None else None
            got = wait_for(done, "cat to end with the text")
            assert got == text + "Hi!\n", (got, text)
        finally:
            stop_proc(term)


def test_computer_mouse_moves_clicks_and_scrolls():
    with Xvfb("640x480") as x, with_display(x) as d:
        st, _, body = d.request("POST", "/computer/mouse",
                                body={"action": "move", "x": 123, "y": 45})
        assert st == 200, body
        st, v = d.get_json("/computer/screen")
        assert v["cursor"] == {"x": 123, "y": 45}
        for b in ({"action": "click"},
                  {"action": "click", "x": 7, "y": 9, "button": "right",
                   "count": 2},
                  {"action": "click", "button": 2},
                  {"action": "scroll", "dy": 3},
                  {"action": "scroll", "dx": -2, "x": 1, "y": 2},
                  {"action": "drag", "x": 10, "y": 10, "to_x": 200,
                   "to_y": 150}):
            st, _, body = d.request("POST", "/computer/mouse", body=b)
            assert st == 200, (b, body)
        st, v = d.get_json("/computer/screen")
        assert v["cursor"] == {"x": 200, "y": 150}


def test_computer_bad_input_is_400_and_changes_nothing():
    with Xvfb("640x480") as x, with_display(x) as d:
        d.request("POST", "/computer/mouse",
                  body={"action": "move", "x": 50, "y": 60})
        for b in ({"action": "fly", "x": 1, "y": 1},
                  {"x": 1, "y": 1},
                  {"action": "move", "x": 1},
                  {"action": "move"},
                  {"action": "move", "x": 640, "y": 10},
                  {"action": "move", "x": 10, "y": 480},
                  {"action": "move", "x": -1, "y": 10},
                  {"action": "move", "x": "1", "y": 10},
                  {"action": "click", "x": 1, "y": 1, "button": "fourth"},
                  {"action": "click", "x": 1, "y": 1, "button": 6},
                  {"action": "click", "x": 1, "y": 1, "count": 0},
                  {"action": "click", "y": 1},
                  {"action": "drag", "x": 1, "y": 1},
                  {"action": "drag", "x": 1, "y": 1, "to_x": 700,
                   "to_y": 1},
                  {"action": "scroll"},
                  {"action": "scroll", "dy": 1000}):
            error(d, "POST", "/computer/mouse", b)
        st, v = d.get_json("/computer/screen")
        assert v["cursor"] == {"x": 50, "y": 60}
        for b in ({}, {"text": "a", "keys": "a"}, {"text": ""},
                  {"text": "bell\x07"}, {"text": 5},
                  {"keys": "ctrl+nosuchkey"}, {"keys": "ctrl+"},
                  {"keys": ""}, {"keys": "   "},
                  {"keys": "+".join(["a"] * 9)}):
            v = error(d, "POST", "/computer/keyboard", b)
        assert "nosuchkey" in error(d, "POST", "/computer/keyboard",
                                    {"keys": "ctrl+nosuchkey"})["message"]
        # Names xdotool takes are accepted.
        for keys in ("ctrl+shift+t", "Return", "alt+F4 Escape",
                     "super", "ctrl++", "Page_Up pagedown", "é"):
            st, _, body = d.request("POST", "/computer/keyboard",
                                    body={"keys": keys})
            assert st == 200, (keys, body)
        assert d.request("GET", "/ping")[0] == 200


def test_computer_without_a_display_is_503():
    d = Execd()
    d.env.pop("DISPLAY", None)
    with d:
        for method, path, body in (
                ("GET", "/computer/screen", None),
                ("GET", "/computer/screenshot", None),
                ("POST", "/computer/mouse", {"action": "move", "x": 1,
                                             "y": 1}),
                ("POST", "/computer/keyboard", {"text": "x"}),
                ("GET", "/computer/windows", None),
                ("POST", "/computer/windows/12/focus", None)):
            v = error(d, method, path, body, status=503)
            assert v["code"] == "UNAVAILABLE" and "DISPLAY" in v["message"]
        assert d.request("GET", "/ping")[0] == 200


def test_computer_display_that_went_away_and_came_back():
    x = Xvfb("640x480").start()
    try:
        with with_display(x) as d:
            st, v = d.get_json("/computer/screen")
            assert st == 200, v
            x.stop()
            for path in ("/computer/screen", "/computer/screenshot"):
                v = error(d, "GET", path, status=503)
                assert x.display in v["message"], v
            assert d.request("GET", "/ping")[0] == 200
            x2 = Xvfb("320x200", number=x.number).start()
            try:
                st, v = d.get_json("/computer/screen")
                assert st == 200 and v["width"] == 320, v
            finally:
                x2.stop()
    finally:
        x.stop()


def test_computer_mcp_tools():
    with Xvfb("640x480") as x, \
            Execd("--access-token", TOKEN,
                  env={"DISPLAY": x.display}) as d:
        x.run("xsetroot", "-solid", "#ff0000").wait(10)
        sid, _ = initialize(d)

        def tool(name, args):
            st, _, r = post(d, {"jsonrpc": "2.0", "id": 1,
                                "method": "tools/call",
                                "params": {"name": name,
                                           "arguments": args}}, sid)
            assert st == 200, r
            return r["result"]

        r = tool("screenshot", {"scale_width": 320})
        assert not r.get("isError"), r
        img = r["content"][0]
        assert img["type"] == "image" and img["mimeType"] == "image/png"
        w, h, rows = png_decode(base64.b64decode(img["data"]))
        assert (w, h) == (320, 240) and rows[10][10] == (255, 0, 0)
        r = tool("click", {"x": 33, "y": 44})
        assert not r.get("isError"), r
        st, v = d.get_json("/computer/screen",
                           headers={"X-EXECD-ACCESS-TOKEN": TOKEN})
        assert v["cursor"] == {"x": 33, "y": 44}, v
        r = tool("scroll", {"direction": "down", "x": 5, "y": 6})
        assert not r.get("isError"), r
        r = tool("type", {"text": "ok ✓"})
        assert not r.get("isError"), r
        r = tool("key", {"keys": "ctrl+l"})
        assert not r.get("isError"), r
        for name, args, why in (
                ("key", {"keys": "ctrl+bogus"}, "bogus"),
                ("click", {"x": 5000, "y": 1}, "off"),
                ("click", {"x": 5}, "both"),
                ("scroll", {"direction": "sideways"}, "direction"),
                ("screenshot", {"x": 700}, "screen"),
                ("type", {"text": "a\x00b"}, "control")):
            r = tool(name, args)
            assert r.get("isError") is True, (name, r)
            assert why in r["content"][0]["text"], (name, r)


def test_computer_stuck_x_server_is_504_and_recovers():
    # A stopped Xvfb never answers: the request gets 504 after
    # --fs-timeout while execd serves the rest; once the server runs
    # again, the connection serves again.
    with Xvfb("640x480") as x, Execd("--fs-timeout", "2",
                                     env={"DISPLAY": x.display}) as d:
        st, v = d.get_json("/computer/screen")
        assert st == 200, v
        os.kill(x.proc.pid, signal.SIGSTOP)
        try:
            v = error(d, "GET", "/computer/screenshot", status=504)
            assert v["code"] == "TIMEOUT" and "X display" in v["message"], v
            assert d.request("GET", "/ping")[0] == 200
        finally:
            os.kill(x.proc.pid, signal.SIGCONT)
        wait_for(lambda: d.get_json("/computer/screen")[0] == 200,
                 "the display to answer again")


def test_computer_key_names_are_resolved_off_the_loop():
    # A name Xlib does not know reads its keysym database ($XKEYSYMDB)
    # from disk; a FIFO with no writer holds that read.  It must hold one
    # request on a worker, never the loop: /ping answers meanwhile, and
    # once the database arrives the request is answered (400, unknown).
    import threading
    with tempfile.TemporaryDirectory() as tmp, Xvfb("640x480") as x:
        fifo = os.path.join(tmp, "XKeysymDB")
        os.mkfifo(fifo)
        with Execd(env={"DISPLAY": x.display, "XKEYSYMDB": fifo}) as d:
            out = {}

            def press():
                out["r"] = d.request("POST", "/computer/keyboard",
                                     body={"keys": "ctrl+nosuchkey"},
                                     timeout=60)
            t = threading.Thread(target=press, daemon=True)
            t.start()
            time.sleep(1)
            try:
                assert d.request("GET", "/ping", timeout=20)[0] == 200
            finally:
                # Release the reader whatever happened.  Xlib reads as
                # many bytes as the file's size, 0 for a FIFO: it may be
                # done (and gone) once the FIFO is opened for writing.
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK) \
                    if t.is_alive() else None
                if fd is not None:
                    try:
                        os.write(fd, b"! none\n")
                    except BrokenPipeError:
                        pass
                    os.close(fd)
            t.join(60)
            st, _, body = out["r"]
            assert st == 400 and b"nosuchkey" in body, (st, body)
            assert d.request("GET", "/ping")[0] == 200


def test_computer_display_option_names_the_display():
    # --display (and the policy key) win over $DISPLAY, which here names
    # no server at all.
    with Xvfb("320x200") as x:
        with Execd("--display", x.display,
                   env={"DISPLAY": ":9999"}) as d:
            st, v = d.get_json("/computer/screen")
            assert st == 200, v
            assert (v["width"], v["height"], v["display"]) == \
                (320, 200, x.display)
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            f.write("display: \"%s\"\n" % x.display)
            f.flush()
            d = Execd("--config", f.name)
            d.env.pop("DISPLAY", None)
            with d:
                st, v = d.get_json("/computer/screen")
                assert st == 200 and v["display"] == x.display, v
