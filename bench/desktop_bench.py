"""The desktop rows of bench/run.sh (issue 29): on one Xvfb of 1280x800,
a full-screen screenshot through GET /computer/screenshot against
`xwd -root | xwdtopnm | pnmtopng` from the shell, and a click through
POST /computer/mouse against `xdotool click 1`.

    python3 bench/desktop_bench.py EXECD N

Starts its own Xvfb (-displayfd) and execd (--display), both stopped by
pid; the screen shows a patterned root window (xsetroot -mod) and an
xterm, so the PNGs are not a single colour.  Each side runs N times,
alternating in blocks of 5; prints the medians in microseconds:
"shot_api shot_shell click_api click_shell".  Standard library only.
"""
import http.client
import os
import re
import signal
import subprocess
import sys
import tempfile
import time


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def main():
    execd, n = sys.argv[1], int(sys.argv[2])
    r, w = os.pipe()
    x = subprocess.Popen(["Xvfb", "-screen", "0", "1280x800x24",
                          "-nolisten", "tcp", "-noreset", "-displayfd",
                          str(w)], pass_fds=(w,),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    procs = [x]
    log = tempfile.TemporaryFile()
    try:
        with os.fdopen(r) as f:
            disp = ":" + f.readline().strip()
        env = dict(os.environ, DISPLAY=disp)
        subprocess.run(["xsetroot", "-mod", "7", "5", "-fg", "#2e6f8e",
                        "-bg", "#f0e0c0"], env=env, check=True)
        procs.append(subprocess.Popen(
            ["xterm", "-geometry", "100x30+100+100", "-e", "top"], env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        d = subprocess.Popen([execd, "--listen", "127.0.0.1:0",
                              "--jupyter-listen", "off", "--display", disp,
                              "--log-level", "warn"],
                             stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                             env={k: v for k, v in os.environ.items()
                                  if not k.startswith("EXECD_")})
        procs.append(d)
        port = None
        deadline = time.monotonic() + 20
        while port is None:
            assert time.monotonic() < deadline, "execd did not start"
            log.seek(0)
            m = re.search(rb"listening on 127\.0\.0\.1:(\d+)", log.read())
            port = int(m.group(1)) if m else None
            time.sleep(0.02)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

        def req(method, path, body=None):
            hdrs = {"Content-Type": "application/json"} if body else {}
            c.request(method, path, body=body, headers=hdrs)
            resp = c.getresponse()
            data = resp.read()
            assert resp.status == 200, (path, resp.status, data[:200])
            return data

        # Wait for the xterm's window, and warm both sides up.
        time.sleep(1)
        png = req("GET", "/computer/screenshot")
        assert png[:4] == b"\x89PNG" and len(png) > 1000
        req("POST", "/computer/mouse", '{"action":"move","x":5,"y":5}')
        shell = "xwd -root -silent | xwdtopnm 2>/dev/null | pnmtopng " \
            "2>/dev/null > /dev/null"
        subprocess.run(["sh", "-c", shell], env=env, check=True)
        out = {"sa": [], "ss": [], "ca": [], "cs": []}
        done = 0
        while done < n:
            k = min(5, n - done)
            for _ in range(k):
                t = time.perf_counter()
                req("GET", "/computer/screenshot")
                out["sa"].append(time.perf_counter() - t)
            for _ in range(k):
                t = time.perf_counter()
                subprocess.run(["sh", "-c", shell], env=env, check=True)
                out["ss"].append(time.perf_counter() - t)
            for _ in range(k):
                t = time.perf_counter()
                req("POST", "/computer/mouse", '{"action":"click"}')
                out["ca"].append(time.perf_counter() - t)
            for _ in range(k):
                t = time.perf_counter()
                subprocess.run(["xdotool", "click", "1"], env=env,
                               check=True)
                out["cs"].append(time.perf_counter() - t)
            done += k
        print(" ".join(str(int(median(out[k]) * 1e6))
                       for k in ("sa", "ss", "ca", "cs")))
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                os.kill(p.pid, signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    os.kill(p.pid, signal.SIGKILL)
                    p.wait()


if __name__ == "__main__":
    main()
