"""Run the integration tests: every test_* function of tests/integration.

Each test runs under a time limit; daemons it leaves behind are killed.
On failure the traceback and the daemon logs are printed.  The last line
is "N passed, N failed".  Usage: run.py [substring-filter]
"""
import glob
import importlib.util
import os
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lib  # noqa: E402

LIMIT = int(os.environ.get("TEST_TIMEOUT", "60"))


class Timeout(Exception):
    pass


def on_alarm(signum, frame):
    raise Timeout("test took longer than %d s" % LIMIT)


def main():
    filt = sys.argv[1] if len(sys.argv) > 1 else ""
    here = os.path.dirname(os.path.abspath(__file__))
    passed = failed = 0
    signal.signal(signal.SIGALRM, on_alarm)
    for path in sorted(glob.glob(os.path.join(here, "test_*.py"))):
        name = os.path.basename(path)[:-3]
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for fn in sorted(k for k in dir(mod) if k.startswith("test_")):
            full = "%s.%s" % (name, fn)
            if filt not in full:
                continue
            t0 = time.monotonic()
            logs = []
            orig_start = lib.Execd.start

            def tracking_start(self, *a, **kw):
                logs.append(self)
                return orig_start(self, *a, **kw)
            lib.Execd.start = tracking_start
            signal.alarm(LIMIT)
            try:
                getattr(mod, fn)()
                ok = True
            except BaseException:  # noqa: B902 - report everything
                ok = False
                err = traceback.format_exc()
            finally:
                signal.alarm(0)
                lib.Execd.start = orig_start
                lib.kill_all()
            dt = time.monotonic() - t0
            if ok:
                passed += 1
                print("PASS %s (%.2fs)" % (full, dt), flush=True)
            else:
                failed += 1
                print("FAIL %s (%.2fs)\n%s" % (full, dt, err), flush=True)
                for d in logs:
                    print("--- execd log %s ---\n%s" % (d.log_path,
                                                        d.read_log()[-4000:]))
            for d in logs:
                try:
                    os.unlink(d.log_path)
                except OSError:
                    pass
    print("%d passed, %d failed" % (passed, failed))
    if passed + failed == 0:
        print("no test matched %r" % filt)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
