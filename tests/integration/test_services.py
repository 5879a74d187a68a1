"""Supervised services of the policy file (services:, GET /services).

Each test writes a policy file naming small sh services that record
what they do in a temporary directory; execd starts them, restarts them
and stops them.  Bounds are generous: a loaded machine only slows them.
"""
import os
import signal
import subprocess
import tempfile
import time

from lib import EXECD, Execd, alive


def policy(tmp, text):
    path = os.path.join(tmp, "execd.yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


def services(d):
    st, v = d.get_json("/services")
    assert st == 200, v
    return {s["name"]: s for s in v["services"]}, [s["name"] for s in
                                                   v["services"]]


def wait_for(fn, what, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.1)


def test_services_start_in_order_restart_and_stop_with_execd():
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "log")
        ready = os.path.join(tmp, "first.ready")
        path = policy(tmp, """\
services:
  first:
    command: [sh, -c, 'sleep 1; echo first >> "$LOG"; touch "$READY"; exec sleep 1000']
    env: {LOG: "%s", READY: "%s"}
    ready: "%s"
  second:
    command: [sh, -c, 'echo "second $WHO" >> "$LOG"; exec sleep 1000']
    env: {LOG: "%s", WHO: it}
    after: first
""" % (log, ready, ready, log))
        d = Execd("--config", path).start()
        try:
            by, order = services(d)
            assert order == ["first", "second"]
            # second waits for first to be ready.
            assert by["second"]["state"] == "waiting", by
            assert by["second"]["pid"] is None
            by = wait_for(lambda: (lambda b: b["second"]["state"] ==
                                   "running" and b)(services(d)[0]),
                          "second to run")
            text = wait_for(lambda: (lambda t: t.count("\n") >= 2 and t)(
                open(log).read()), "second's line")
            assert text.split("\n")[:2] == ["first", "second it"], text
            for name in ("first", "second"):
                s = by[name]
                assert s["pid"] > 0 and alive(s["pid"]), s
                assert s["restarts"] == 0 and s["last_exit"] is None, s
                assert s["ready"] is True, s
                assert s["since"].endswith("Z"), s
            # kill -9: started again, after a backoff, with a new pid.
            old = by["second"]["pid"]
            os.kill(old, signal.SIGKILL)
            s = wait_for(lambda: (lambda s: s["state"] == "running" and
                                  s["pid"] != old and s)(
                                      services(d)[0]["second"]),
                         "second to run again")
            assert s["restarts"] == 1, s
            assert "signal 9" in s["last_exit"], s
            assert by["first"]["pid"] == services(d)[0]["first"]["pid"]
            pids = [s["pid"], by["first"]["pid"]]
        finally:
            rc = d.stop()
        assert rc == 0, d.read_log()[-2000:]
        # Stopped with execd: none is left running.
        wait_for(lambda: not any(alive(p) for p in pids),
                 "the services to be gone", timeout=15)
        assert "service second (pid %d) ended: killed by signal 9" % old \
            in d.read_log()


def test_services_after_one_restarts_restart_with_it():
    """When a service restarts, those after it (transitively) are stopped
    and started again once it is ready again; others are left alone."""
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "log")
        ready = os.path.join(tmp, "a.ready")
        path = policy(tmp, """\
services:
  a:
    command: [sh, -c, 'echo a up >> "$LOG"; sleep 0.5; echo a ready >> "$LOG"; touch "$READY"; exec sleep 1000']
    env: {LOG: "%s", READY: "%s"}
    ready: "%s"
  b:
    command: [sh, -c, 'echo b up >> "$LOG"; exec sleep 1000']
    env: {LOG: "%s"}
    after: a
  c:
    command: [sh, -c, 'echo c up >> "$LOG"; exec sleep 1000']
    env: {LOG: "%s"}
    after: b
  other:
    command: [sleep, "1000"]
""" % (log, ready, ready, log, log))

        def running(by, names):
            return all(by[n]["state"] == "running" and by[n]["ready"]
                       for n in names)

        d = Execd("--config", path).start()
        pids = []
        try:
            by = wait_for(lambda: (lambda b: running(b, "abc") and b)(
                services(d)[0]), "a, b and c to run")
            old = {n: by[n]["pid"] for n in ("a", "b", "c", "other")}
            pids += old.values()
            os.kill(old["a"], signal.SIGKILL)
            os.unlink(ready)        # the new a makes it again
            by = wait_for(lambda: (lambda b: running(b, "abc") and all(
                b[n]["restarts"] == 1 for n in "abc") and b)(
                    services(d)[0]), "a, b and c to run again")
            for n in "abc":
                assert by[n]["pid"] != old[n], by
                pids.append(by[n]["pid"])
            wait_for(lambda: not any(alive(old[n]) for n in "bc"),
                     "the old b and c to be gone", timeout=15)
            assert "signal 9" in by["a"]["last_exit"], by["a"]
            assert "signal 15" in by["b"]["last_exit"], by["b"]
            # Each started again only after the one it comes after (a
            # running service may not have written its line yet).
            def log_lines():
                with open(log) as f:
                    return f.read().split("\n")
            wait_for(lambda: log_lines().count("c up") == 2,
                     "the new c to write its line", timeout=15)
            lines = log_lines()
            assert lines.count("b up") == 2 and lines.count("c up") == 2, \
                lines
            second = [i for i, x in enumerate(lines) if x == "a ready"][1]
            b2 = [i for i, x in enumerate(lines) if x == "b up"][1]
            c2 = [i for i, x in enumerate(lines) if x == "c up"][1]
            assert second < b2 and second < c2, lines
            # b has no ready path: it is ready once started, so c may
            # write its line first. The order of starts is execd's.
            starts = [x.split("service ")[1].split(" ")[0]
                      for x in d.read_log().split("\n")
                      if "service " in x and " started (pid" in x]
            assert starts.index("c", starts.index("c") + 1) > \
                starts.index("b", starts.index("b") + 1), starts
            # One after nothing is left alone.
            o = by["other"]
            assert o["pid"] == old["other"] and o["restarts"] == 0, o
        finally:
            rc = d.stop()
        assert rc == 0, d.read_log()[-2000:]
        wait_for(lambda: not any(alive(p) for p in pids),
                 "the services to be gone", timeout=15)


# A stand-in for a hung mount: access() of $SLOW_PATH blocks until
# $SLOW_RELEASE exists, and each such call adds a line to $SLOW_COUNT.
SLOW_ACCESS = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
access(const char *p, int mode)
{
	static int (*real)(const char *, int);
	const char *slow = getenv("SLOW_PATH");
	int fd;

	if (real == NULL)
		real = (int (*)(const char *, int))dlsym(RTLD_NEXT, "access");
	if (slow != NULL && strcmp(p, slow) == 0) {
		fd = open(getenv("SLOW_COUNT"), O_WRONLY | O_APPEND | O_CREAT,
		    0600);
		if (fd >= 0) {
			(void)write(fd, "x\n", 2);
			close(fd);
		}
		while (real(getenv("SLOW_RELEASE"), F_OK) != 0)
			usleep(20000);
	}
	return real(p, mode);
}
"""


def test_services_ready_path_that_hangs_does_not_stall_execd():
    """The ready path is checked on a worker: one that does not answer (a
    hung mount, here access() held in an LD_PRELOAD stand-in) leaves
    execd answering, with one check in flight at a time, not one per
    poll; the service is ready once the check answers."""
    import lib
    with open(lib.EXECD, "rb") as f:
        if b"ld-linux" not in f.read(4096):
            # a static execd: no LD_PRELOAD stand-in can hold its
            # access(); the dynamic stages (plain, ASan, UBSan) run this
            return
    with tempfile.TemporaryDirectory() as tmp:
        so = os.path.join(tmp, "slow.so")
        src = os.path.join(tmp, "slow.c")
        with open(src, "w") as f:
            f.write(SLOW_ACCESS)
        subprocess.run(["cc", "-shared", "-fPIC", "-o", so, src, "-ldl"],
                       check=True)
        ready = os.path.join(tmp, "hung.ready")
        release = os.path.join(tmp, "release")
        count = os.path.join(tmp, "count")
        open(ready, "w").close()
        path = policy(tmp, """\
services:
  hung:
    command: [sleep, "1000"]
    ready: "%s"
  next:
    command: [sleep, "1000"]
    after: hung
""" % ready)
        asan = os.environ.get("ASAN_OPTIONS", "")
        env = {"LD_PRELOAD": so, "SLOW_PATH": ready,
               "SLOW_RELEASE": release, "SLOW_COUNT": count,
               "ASAN_OPTIONS": asan + (":" if asan else "") +
               "verify_asan_link_order=0"}
        d = Execd("--config", path, "--fs-timeout", "1", env=env).start()
        pids = []
        try:
            wait_for(lambda: os.path.exists(count), "the ready check")
            # The check hangs: execd answers all the same, many times
            # over the polls the check would have made.
            t0 = time.monotonic()
            for _ in range(20):
                by = services(d)[0]
                assert by["hung"]["state"] == "running", by
                assert by["hung"]["ready"] is False, by
                assert by["next"]["state"] == "waiting", by
                time.sleep(0.1)
            assert d.request("GET", "/ping", timeout=10)[0] == 200
            assert time.monotonic() - t0 >= 2
            with open(count) as f:
                assert f.read() == "x\n"    # one check, not one per poll
            # Past --fs-timeout it is given up on, and said so.
            wait_for(lambda: "hung.ready did not answer in 1 s" in
                     d.read_log(), "the check to be abandoned")
            open(release, "w").close()
            by = wait_for(lambda: (lambda b: b["hung"]["ready"] and
                                   b["next"]["state"] == "running" and b)(
                                       services(d)[0]),
                          "hung to be ready and next to run")
            pids = [by["hung"]["pid"], by["next"]["pid"]]
        finally:
            open(release, "w").close()
            rc = d.stop()
        assert rc == 0, d.read_log()[-2000:]
        wait_for(lambda: not any(alive(p) for p in pids),
                 "the services to be gone", timeout=15)


def test_services_back_off_and_follow_their_restart_policy():
    with tempfile.TemporaryDirectory() as tmp:
        count = os.path.join(tmp, "count")
        path = policy(tmp, """\
services:
  failing:
    command: [sh, -c, 'echo x >> "$COUNT"; echo oops >&2; exit 3']
    env: {COUNT: "%s"}
  once:
    command: [sh, -c, 'exit 0']
    restart: on-failure
  never:
    command: [sh, -c, 'exit 4']
    restart: never
""" % count)
        with Execd("--config", path) as d:
            t0 = time.monotonic()
            wait_for(lambda: services(d)[0]["failing"]["restarts"] >= 2,
                     "failing to be started again twice")
            time.sleep(2)
            by = services(d)[0]
            elapsed = time.monotonic() - t0
            f = by["failing"]
            # Backoff 0.5 s, 1 s, 2 s, 4 s ...: a handful of starts, not
            # the thousands an immediate restart would make.
            with open(count) as fh:
                starts = len(fh.read().split())
            assert 3 <= starts <= 2 + elapsed / 0.5, (starts, elapsed)
            assert f["last_exit"] == "exit status 3", f
            assert f["state"] in ("backoff", "running"), f
            for name, why in (("once", "exit status 0"),
                              ("never", "exit status 4")):
                s = by[name]
                assert s["state"] == "exited" and s["restarts"] == 0, s
                assert s["last_exit"] == why and s["pid"] is None, s
            assert "service failing" in d.read_log()
            assert "oops" in d.read_log()


def test_services_bad_entries_stop_execd_with_their_line_and_column():
    cases = [
        ("services: [a]\n", ":1:11: services wants a mapping"),
        ("services:\n  A: {command: [x]}\n",
         ":2:3: a service's name is 1 to 31 of a-z"),
        ("services:\n  a: {cwd: /}\n", ":2:3: services.a needs a command"),
        ("services:\n  a: {command: [x], after: b}\n",
         ":2:28: services.a.after: 'b' is no service given before"),
        ("services:\n  a: {command: [x]}\n  b: {command: [y], after: b}\n",
         ":3:28: services.b.after: 'b' is no service given before"),
        ("services:\n  a: {command: [x], restart: sometimes}\n",
         ":2:30: services.a.restart: always, on-failure or never"),
        ("services:\n  a: {command: [x], ready: rel}\n",
         ":2:28: services.a.ready: an absolute path"),
        ("services:\n  a: {command: [x], colour: red}\n",
         ":2:21: unknown key 'colour' of a service"),
        ("services:\n  a: {command: [x]}\n  a: {command: [y]}\n",
         ":3:3: 'services.a' given twice"),
        ("services:\n  a: {command: []}\n",
         ":2:17: services.a.command: an empty list"),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for text, want in cases:
            path = policy(tmp, text)
            r = subprocess.run([EXECD, "--config", path,
                                "--listen", "127.0.0.1:0"],
                               capture_output=True, text=True, timeout=30)
            assert r.returncode == 2, (text, r)
            assert ("execd: " + path + want) in r.stderr, (text, r.stderr)
            assert "listening" not in r.stderr, r.stderr


def test_services_in_print_config_read_back_the_same():
    with tempfile.TemporaryDirectory() as tmp:
        path = policy(tmp, """\
services:
  x:
    command: [Xvfb, ":99", -screen, "0", 1280x800x24]
    ready: /tmp/.X11-unix/X99
  wm:
    command: [openbox]
    env: {DISPLAY: ":99"}
    cwd: /
    after: x
    restart: on-failure
""")
        r = subprocess.run([EXECD, "--config", path, "--print-config"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r
        assert "\nservices:\n  x:\n" in r.stdout, r.stdout
        again = policy(tmp, r.stdout)
        r2 = subprocess.run([EXECD, "--config", again, "--print-config"],
                            capture_output=True, text=True, timeout=30)
        assert r2.returncode == 0 and r2.stdout == r.stdout, r2
        assert "restart: on-failure" in r.stdout
        assert "after: x" in r.stdout
        # None: a commented key, and GET /services is an empty list.
        with Execd() as d:
            st, v = d.get_json("/services")
            assert st == 200 and v == {"services": []}, v
