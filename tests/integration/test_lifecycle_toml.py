"""Lifecycle hooks configured in TOML, the saved TOML file, the start-up
status file of --lifecycle-startup-status-file (upstream 1.1's)."""
import hashlib
import json
import os
import tempfile

from lib import Execd, wait_for
from test_runtime_init import init, lines, ready

TOML = """# hooks, as a platform may write them
version = 1

[preStart]
command = ["sh", "-c", "echo \\"pre\\" >> '%(out)s'"]
timeout_seconds = 7

[[periodic]]
name = 'tick'   # a literal string
schedule = "@every 1s"
command = [
  'sh', '-c',
  "echo tick >> '%(out)s'",
]
"""


def status(path):
    with open(path) as f:
        return f.read().splitlines()


def test_toml_in_the_environment_runs_the_hooks_and_is_saved_as_toml():
    with tempfile.TemporaryDirectory() as tmp:
        out, saved = os.path.join(tmp, "out"), os.path.join(tmp, "lc")
        env = {"OPENSANDBOX_LIFECYCLE": TOML % {"out": out},
               "EXECD_LIFECYCLE_CONFIG": saved}
        with Execd(env=env) as d:
            assert wait_for(lambda: ready(d)[0] == 200, 10), d.read_log()
            assert wait_for(lambda: len(lines(out)) >= 3, 15), lines(out)
            got = lines(out)
            assert got[0] == "pre" and set(got[1:]) == {"tick"}, got
        assert os.stat(saved).st_mode & 0o777 == 0o600
        with open(saved) as f:
            text = f.read()
        assert not text.lstrip().startswith("{"), text
        assert "[preStart]" in text and "[[periodic]]" in text, text
        assert "timeout_seconds = 7" in text, text
        assert 'name = "tick"' in text, text
        # no temporary left beside it
        assert sorted(os.listdir(tmp)) == ["lc", "out"], os.listdir(tmp)
        # started again without the variable: the saved hooks run
        os.unlink(out)
        with Execd(env={"EXECD_LIFECYCLE_CONFIG": saved}) as d:
            assert wait_for(lambda: lines(out)[:1] == ["pre"], 10), \
                d.read_log()
            assert wait_for(lambda: "tick" in lines(out), 10), lines(out)
        # a blank variable is none, as upstream trims it: the file again
        os.unlink(out)
        with Execd(env={"EXECD_LIFECYCLE_CONFIG": saved,
                        "OPENSANDBOX_LIFECYCLE": " \n\t"}) as d:
            assert wait_for(lambda: lines(out)[:1] == ["pre"], 10), \
                d.read_log()


def test_the_default_saved_file_is_toml_and_an_old_json_one_is_moved():
    with tempfile.TemporaryDirectory() as home:
        out = os.path.join(home, "out")
        os.mkdir(os.path.join(home, ".execd"), 0o700)
        old = os.path.join(home, ".execd", "lifecycle.json")
        new = os.path.join(home, ".execd", "lifecycle.toml")
        with open(old, "w") as f:
            json.dump({"preStart": {"command": [
                "sh", "-c", "echo json-pre >> %s" % out]}}, f)
        with Execd(env={"HOME": home}) as d:
            assert wait_for(lambda: ready(d)[0] == 200, 10), d.read_log()
            assert lines(out) == ["json-pre"], d.read_log()
        assert not os.path.exists(old)
        with open(new) as f:
            text = f.read()
        assert "[preStart]" in text and "timeout_seconds = 60" in text, text
        assert os.stat(new).st_mode & 0o777 == 0o600
        # and from the environment, in TOML, the default file is TOML too
        with Execd(env={"HOME": home, "OPENSANDBOX_LIFECYCLE":
                        "[preStart]\ncommand = ['true']\n"}) as d:
            assert wait_for(lambda: ready(d)[0] == 200, 10), d.read_log()
        with open(new) as f:
            assert "command = [\"true\"]" in f.read()


def start_refused(env, *args):
    d = Execd(*args, env=env)
    try:
        d.start(timeout=5)
    except AssertionError:
        pass
    assert d.proc.wait(10) == 1, d.read_log()
    return d.read_log()


def test_invalid_toml_is_refused_at_start_with_its_line():
    with tempfile.TemporaryDirectory() as tmp:
        saved = os.path.join(tmp, "lc")
        bad = "version = 1\n[preStart]\ncommand = ['x']\ntimeout_seconds = 1.5\n"
        log = start_refused({"OPENSANDBOX_LIFECYCLE": bad,
                             "EXECD_LIFECYCLE_CONFIG": saved})
        assert "decode OPENSANDBOX_LIFECYCLE: line 4: floats and dates " \
            "are not supported" in log, log
        assert not os.path.exists(saved)
        # the rules after the syntax are the JSON form's
        log = start_refused({"OPENSANDBOX_LIFECYCLE":
                             "[[periodic]]\nname = 'a'\nschedule = '@daily'\n"
                             "command = ['true']\n[[periodic]]\nname = 'a'\n"
                             "schedule = '@daily'\ncommand = ['true']\n",
                             "EXECD_LIFECYCLE_CONFIG": saved})
        assert 'duplicate periodic hook name "a"' in log, log
        # a bad saved file, without the variable
        with open(saved, "w") as f:
            f.write("[preStart]\ncommand = 'not a list'\n")
        log = start_refused({"EXECD_LIFECYCLE_CONFIG": saved})
        assert "invalid saved lifecycle config" in log and \
            "preStart command must be an array of strings" in log, log
        with open(saved, "w") as f:
            f.write("[preStart]\n\ncommand = [\"x\", \"\\q\"]\n")
        log = start_refused({"EXECD_LIFECYCLE_CONFIG": saved})
        assert "line 3: invalid escape" in log, log
        # a file too long is refused whole, not read in part
        with open(saved, "w") as f:
            f.write("[preStart]\ncommand = ['true']\n" + "#\n" * (1 << 19))
        log = start_refused({"EXECD_LIFECYCLE_CONFIG": saved})
        assert "larger than 1048576 bytes" in log, log


def test_the_status_file_is_appended_to_and_never_created():
    with tempfile.TemporaryDirectory() as tmp:
        st, out = os.path.join(tmp, "status"), os.path.join(tmp, "out")
        saved = os.path.join(tmp, "lc")
        pre = {"preStart": {"command": ["sh", "-c", "echo pre >> %s" % out],
                            "timeoutSeconds": 42}}
        env = {"OPENSANDBOX_LIFECYCLE": json.dumps(pre),
               "EXECD_LIFECYCLE_CONFIG": saved}
        with open(st, "w") as f:
            f.write("earlier\n")
        with Execd("--lifecycle-startup-status-file", st, env=env) as d:
            assert wait_for(lambda: ready(d)[0] == 200, 10), d.read_log()
            assert status(st) == ["earlier", "running 42", "done 0"]
        # a failing preStart: done 1, and execd ends with status 1
        fail = {"preStart": {"command": ["sh", "-c", "exit 4"]}}
        open(st, "w").close()
        log = start_refused({"OPENSANDBOX_LIFECYCLE": json.dumps(fail),
                             "EXECD_LIFECYCLE_CONFIG": saved},
                            "--lifecycle-startup-status-file", st)
        assert status(st) == ["running 60", "done 1"], log
        # no preStart: done 0 alone (from the environment variable too)
        open(st, "w").close()
        none = {"periodic": [{"name": "p", "schedule": "@daily",
                              "command": ["true"]}]}
        with Execd(env={"OPENSANDBOX_LIFECYCLE": json.dumps(none),
                        "EXECD_LIFECYCLE_CONFIG": saved,
                        "EXECD_LIFECYCLE_STARTUP_STATUS_FILE": st}) as d:
            assert wait_for(lambda: status(st) == ["done 0"], 10)
        # a file that is not there is not made, and start-up fails
        gone = os.path.join(tmp, "gone")
        log = start_refused(env, "--lifecycle-startup-status-file", gone)
        assert not os.path.exists(gone)
        assert "open lifecycle startup status" in log, log
        assert not os.path.exists(out) or lines(out) == ["pre"], lines(out)


def test_an_init_reports_its_pre_start_in_the_status_file():
    with tempfile.TemporaryDirectory() as tmp:
        st = os.path.join(tmp, "status")
        open(st, "w").close()
        with Execd("--runtime-init", "--lifecycle-startup-status-file", st,
                   env={"EXECD_LIFECYCLE_CONFIG": os.path.join(tmp, "lc")}) \
                as d:
            assert status(st) == []
            code, body = init(d, {"sandboxId": "s", "generation": 1,
                                  "accessTokenHash": "sha256:" + hashlib.
                                  sha256(b"tok").hexdigest(),
                                  "lifecycle": {"preStart": {
                                      "command": ["true"],
                                      "timeoutSeconds": 9}}})
            assert code == 200, body
            assert status(st) == ["running 9", "done 0"]
            # the file gone: an init still succeeds, the log says why
            os.unlink(st)
            code, body = init(d, {"sandboxId": "s", "generation": 2,
                                  "lifecycle": {}}, token="tok")
            assert code == 200, body
            assert "open lifecycle startup status" in d.read_log()
            assert not os.path.exists(st)
