"""POST /command with argv: a list run without a shell, its program found
in the child's PATH; exactly one of command and argv."""
import json
import os
import shutil
import tempfile

from lib import Execd, children_of, expect_error, kinds, wait_for
from test_command import (ID_RE, assert_failed, assert_ok, finished, lines,
                          logs, run_cmd, status)

# Prints its arguments as one JSON line: what the program was given.
ECHO_ARGS = ["python3", "-c",
             "import json, sys; print(json.dumps(sys.argv[1:]))"]


def run_argv(d, argv, **opts):
    return run_cmd(d, None, argv=argv, **opts)


def given(evs):
    """The arguments ECHO_ARGS reported."""
    out = lines(evs, "stdout")
    assert len(out) == 1, evs
    return json.loads(out[0])


def make_tool(directory, name, body="#!/bin/sh\necho tool \"$@\"\n",
              mode=0o755):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(body)
    os.chmod(path, mode)
    return path


def test_items_reach_the_program_unexpanded():
    items = ["a b", "  lead", "it's", 'say "hi"', "$HOME", "${PATH}", "*",
             "?", "~", "`id`", "$(id)", "a;b", "x|y", "", "two\nlines",
             "tab\there", "back\\slash", "\u00e9t\u00e9"]
    with Execd() as d:
        st, evs = run_argv(d, ECHO_ARGS + items)
        assert st == 200, evs
        assert_ok(evs)
        assert given(evs) == items
        # The status shows the list as JSON, as upstream's does.
        s = status(d, evs[0]["text"])
        assert s["content"].startswith('["python3","-c",'), s
        assert json.loads(s["content"]) == ECHO_ARGS + items, s
        assert s["exit_code"] == 0 and not s["running"], s
        # A shell command's content is its text, as before.
        st, evs = run_cmd(d, "echo *")
        assert status(d, evs[0]["text"])["content"] == "echo *"


def test_exit_status_and_stderr():
    with Execd() as d:
        st, evs = run_argv(d, ["sh", "-c", "echo out; echo err >&2; exit 3"])
        assert lines(evs, "stdout") == ["out"], evs
        assert lines(evs, "stderr") == ["err"], evs
        err = assert_failed(evs, "3")
        assert err["traceback"] == ["exit status 3"], err
        st, evs = run_argv(d, ["false"])
        assert_failed(evs, "1")


def test_program_is_found_in_the_childs_path():
    tmp = tempfile.mkdtemp(prefix="execd-argv-")
    try:
        first = os.path.join(tmp, "first")
        second = os.path.join(tmp, "second")
        envdir = os.path.join(tmp, "envdir")
        for p in (first, second, envdir):
            os.mkdir(p)
        # Not executable, a directory, then the real one: the real one.
        make_tool(first, "mytool", mode=0o644)
        os.mkdir(os.path.join(first, "mydir"))
        make_tool(second, "mytool")
        make_tool(second, "mydir")
        envfile = os.path.join(tmp, "env")
        with open(envfile, "w") as f:
            f.write("PATH='%s:/usr/bin:/bin'\n" % envdir)
        make_tool(envdir, "filetool", "#!/bin/sh\necho from-file\n")
        with Execd(env={"EXECD_ENVS": envfile}) as d:
            path = "relative/dir:%s:%s:/usr/bin:/bin" % (first, second)
            st, evs = run_argv(d, ["mytool", "x y"], envs={"PATH": path})
            assert lines(evs, "stdout") == ["tool x y"], evs
            assert_ok(evs)
            st, evs = run_argv(d, ["mydir"], envs={"PATH": path})
            assert lines(evs, "stdout") == ["tool"], evs
            # PATH from the EXECD_ENVS file, under the request's.
            st, evs = run_argv(d, ["filetool"])
            assert lines(evs, "stdout") == ["from-file"], evs
            st, evs = run_argv(d, ["filetool"], envs={"PATH": second})
            assert_failed_start(d, evs, "filetool")
            # execd's own PATH is not where it looks.
            st, evs = run_argv(d, ["mytool"])
            assert_failed_start(d, evs, "mytool")
            # A name with a slash is under the cwd; an absolute one as is.
            st, evs = run_argv(d, ["./mytool", "rel"], cwd=second)
            assert lines(evs, "stdout") == ["tool rel"], evs
            st, evs = run_argv(d, [os.path.join(second, "mytool"), "abs"],
                               envs={"PATH": "/nowhere"})
            assert lines(evs, "stdout") == ["tool abs"], evs
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def assert_failed_start(d, evs, name):
    """init, then an error that says the program was not found; nothing
    was registered."""
    assert kinds(evs) == ["init", "error"], evs
    assert ID_RE.match(evs[0]["text"]), evs
    why = 'exec: "%s": executable file not found in $PATH' % name
    assert evs[1]["error"] == {"ename": "CommandExecError", "evalue": why,
                               "traceback": [why]}, evs
    st, h, body = d.request("GET", "/command/status/" + evs[0]["text"])
    assert st == 404, body


def test_a_missing_program_is_an_error_event():
    tmp = tempfile.mkdtemp(prefix="execd-argv-")
    try:
        plain = make_tool(tmp, "not-a-program", mode=0o644)
        with Execd() as d:
            st, evs = run_argv(d, ["no-such-program-x1", "a"])
            assert st == 200, evs
            assert_failed_start(d, evs, "no-such-program-x1")
            st, evs = run_argv(d, ["no-such-program-x1"], background=True)
            assert_failed_start(d, evs, "no-such-program-x1")
            # A program that cannot be run is said the same way.
            st, evs = run_argv(d, [plain])
            assert kinds(evs) == ["init", "error"], evs
            assert evs[1]["error"]["ename"] == "CommandExecError", evs
            assert plain in evs[1]["error"]["evalue"], evs
            # Its child failed at exec and is reaped as it ends.
            assert wait_for(lambda: not children_of(d.proc.pid),
                            timeout=20), children_of(d.proc.pid)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_background_logs_status_and_reattach():
    with Execd() as d:
        st, evs = run_argv(d, ["printf", "%s\\n", "a b", "*", "$HOME"],
                           background=True)
        assert kinds(evs) == ["init", "execution_complete"], evs
        cid = evs[0]["text"]
        s = finished(d, cid)
        assert s["exit_code"] == 0, s
        assert json.loads(s["content"]) == ["printf", "%s\\n", "a b", "*",
                                            "$HOME"], s
        assert logs(d, cid)[0] == b"a b\n*\n$HOME\n"
        st, h, body = d.request("GET", "/command/%s/stream" % cid)
        assert st == 200, body
        got = [json.loads(x) for x in body.decode().split("\n\n")
               if x.strip()]
        assert [e["text"] for e in got if e["type"] == "stdout"] == [
            "a b", "*", "$HOME"], got
        st, evs = run_argv(d, ["sh", "-c", "exit 4"], background=True)
        s = finished(d, evs[0]["text"])
        assert s["exit_code"] == 4 and s["error"] == "exit status 4", s


def test_env_cwd_timeout_and_stdin_work_alike():
    tmp = tempfile.mkdtemp(prefix="execd-argv-")
    try:
        with Execd() as d:
            st, evs = run_argv(d, ["sh", "-c", 'echo "$A|$PWD"; pwd'],
                               envs={"A": "1 2"}, cwd=tmp)
            real = os.path.realpath(tmp)
            assert lines(evs, "stdout") == ["1 2|" + tmp, real], evs
            st, evs = run_argv(d, ["sleep", "30"], timeout=300)
            err = assert_failed(evs, "-1")
            assert "timeout" in err["traceback"][0], err
            out = os.path.join(tmp, "got")
            st, evs = run_argv(d, ["tee", out], background=True, stdin=True)
            cid = evs[0]["text"]
            st, h, body = d.request(
                "POST", "/command/%s/stdin?close=true" % cid,
                body=b"via stdin\n",
                headers={"Content-Type": "application/octet-stream"})
            assert st == 200, body
            assert finished(d, cid)["exit_code"] == 0
            with open(out, "rb") as f:
                assert f.read() == b"via stdin\n"
            assert logs(d, cid)[0] == b"via stdin\n"
            if os.geteuid() == 0:
                st, evs = run_argv(d, ["id", "-u"], uid=65534, cwd="/")
                assert lines(evs, "stdout") == ["65534"], evs
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_exactly_one_of_command_and_argv():
    one = ("error parsing request, MAYBE invalid body format. exactly one "
           "of non-empty command or argv is required")
    cases = [
        ({}, one),
        ({"command": "true", "argv": ["true"]}, one),
        ({"command": "", "argv": ["true"]}, one),
        ({"command": ""}, one),
        ({"command": None}, one),
        ({"argv": None}, one),
        ({"command": "true", "argv": None}, one),
        ({"background": True}, one),
        ({"argv": "true"},
         "invalid request, field 'argv' must be an array, not a string"),
        ({"argv": {"0": "true"}},
         "invalid request, field 'argv' must be an array, not an object"),
        ({"argv": ["echo", None]},
         "error parsing request, MAYBE invalid body format. argv elements "
         "must be strings: argv[1] is null"),
        ({"argv": ["echo", 5]},
         "error parsing request, MAYBE invalid body format. argv elements "
         "must be strings: argv[1] is a number"),
        ({"argv": [["echo"]]},
         "error parsing request, MAYBE invalid body format. argv elements "
         "must be strings: argv[0] is an array"),
        ({"argv": []},
         "invalid request, argv must contain a non-empty executable"),
        ({"argv": ["", "x"]},
         "invalid request, argv must contain a non-empty executable"),
        ({"argv": ["echo", "a\u0000b"]},
         "invalid request, argv must not contain NUL: argv[1] does"),
        ({"argv": ["ec\u0000ho"]},
         "invalid request, argv must not contain NUL: argv[0] does"),
        ({"command": 5}, "invalid request, field 'command' must be a "
         "string, not an integer"),
    ]
    with Execd() as d:
        for body, msg in cases:
            st, h, data = d.request("POST", "/command", body=body)
            obj = expect_error(st, data, 400, "INVALID_REQUEST_BODY")
            assert obj["message"] == msg, (body, obj)
        # Other checks come after: the argv is fine, the timeout is not.
        st, h, data = d.request("POST", "/command",
                                body={"argv": ["true"], "timeout": -1})
        obj = expect_error(st, data, 400, "INVALID_REQUEST_BODY")
        assert "timeout" in obj["message"], obj
        # An empty item after the program is an argument like any other.
        st, evs = run_argv(d, ECHO_ARGS + ["", "x", ""])
        assert given(evs) == ["", "x", ""], evs
        assert not children_of(d.proc.pid)
