"""Runtime initialisation: GET /ready, POST /internal/init, the
--runtime-init hold, the bound token, re-initialisation."""
import hashlib
import json
import os
import tempfile
import time

from lib import Execd, events, wait_for

HELD = (b'{"error":"execd is not initialized yet: POST /internal/init '
        b'must be called first"}')
DENIED = (b'{"error":"Unauthorized: invalid or missing header '
          b'X-EXECD-ACCESS-TOKEN"}')


def digest(token):
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


def tok(t):
    return {"X-EXECD-ACCESS-TOKEN": t} if t is not None else {}


def init(d, body, token=None):
    st, _, data = d.request("POST", "/internal/init", body=body,
                            headers=tok(token))
    return st, json.loads(data) if data else None


def ready(d):
    st, _, data = d.request("GET", "/ready")
    return st, json.loads(data)


def stdout_of(d, command, token=None, **kw):
    body = dict(kw, command=command)
    st, _, data = d.request("POST", "/command", body=body,
                            headers=tok(token))
    assert st == 200, (st, data)
    evs = events(data)
    assert evs[-1]["type"] == "execution_complete", evs
    # the framing of lines is another matter: compare without terminators
    return "".join(e["text"] for e in evs
                   if e["type"] == "stdout").rstrip("\n")


def test_every_route_but_the_probes_is_held_until_init():
    with Execd("--runtime-init", "--access-token", "legacy") as d:
        assert d.request("GET", "/ping")[0] == 200
        assert ready(d) == (503, {"initialized": False})
        for method, path, hdrs in [
                ("GET", "/metrics", {}),
                ("GET", "/metrics", tok("legacy")),
                ("POST", "/command", tok("legacy")),
                ("GET", "/nope", {}),
                ("GET", "/proxy/1/x", tok("legacy")),
                ("POST", "/ping", {})]:
            st, h, body = d.request(method, path, headers=hdrs)
            assert (st, body) == (503, HELD), (method, path, st, body)
            assert h["content-type"].startswith("application/json"), h
        st, body = init(d, {"sandboxId": "sb-1", "generation": 1})
        assert st == 200, body
        assert body == {"status": "initialized", "sandboxId": "sb-1",
                        "generation": 1}, body
        assert ready(d) == (200, {"initialized": True, "sandboxId": "sb-1",
                                  "generation": 1})
        # no hash bound: the configured token guards the routes again
        assert d.request("GET", "/metrics")[0] == 401
        assert d.request("GET", "/metrics", headers=tok("legacy"))[0] == 200


def test_runtime_init_from_the_environment_and_its_values():
    with Execd(env={"EXECD_RUNTIME_INIT": "true"}) as d:
        assert d.request("GET", "/metrics")[0] == 503
    with Execd(env={"EXECD_RUNTIME_INIT": "0"}) as d:
        assert d.request("GET", "/metrics")[0] == 200
        assert ready(d) == (200, {"initialized": True})
    with Execd("--runtime-init=false") as d:
        assert d.request("GET", "/metrics")[0] == 200
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        f.write("runtime_init: yes\n")
        f.flush()
        with Execd("--config", f.name) as d:
            assert d.request("GET", "/metrics")[0] == 503
        # the command line goes over the file
        with Execd("--config", f.name, "--runtime-init=0") as d:
            assert d.request("GET", "/metrics")[0] == 200
    d = Execd(env={"EXECD_RUNTIME_INIT": "maybe"})
    try:
        d.start(timeout=5)
        raise AssertionError("started with EXECD_RUNTIME_INIT=maybe")
    except AssertionError as e:
        assert "EXECD_RUNTIME_INIT" in str(e), e


def test_the_bound_token_is_the_hash_of_the_one_sent():
    with Execd("--runtime-init", "--access-token", "legacy") as d:
        st, body = init(d, {"sandboxId": "sb", "generation": 3,
                            "accessTokenHash": "  " + digest("t0k") + " "})
        assert st == 200, body
        assert d.request("GET", "/metrics", headers=tok("t0k"))[0] == 200
        for wrong in (None, "t0k ", "T0K", "legacy", digest("t0k"),
                      hashlib.sha256(b"t0k").hexdigest()):
            st, _, body = d.request("GET", "/metrics", headers=tok(wrong))
            assert (st, body) == (401, DENIED), (wrong, st, body)
        # the probes still need nothing
        assert d.request("GET", "/ping")[0] == 200
        assert ready(d)[0] == 200


def test_reinit_takes_a_new_generation_token_and_environment():
    with Execd("--runtime-init") as d:
        st, body = init(d, {"sandboxId": "first", "generation": 7,
                            "accessTokenHash": digest("A"),
                            "envs": {"ONE": "1", "SHARED": "a"}})
        assert st == 200, body
        out = stdout_of(d, "echo $ONE-$SHARED-$TWO-$OPENSANDBOX_ID", "A")
        assert out == "1-a--first", out
        # a process in the sandbox cannot bind a token of its own
        nxt = {"sandboxId": "second", "generation": 8,
               "accessTokenHash": digest("B"),
               "envs": {"TWO": "2", "SHARED": "b"}}
        for hdrs in (None, "B", "wrong"):
            st, _, data = d.request("POST", "/internal/init", body=nxt,
                                    headers=tok(hdrs))
            assert (st, data) == (401, DENIED), (hdrs, st, data)
        assert ready(d)[1]["generation"] == 7
        st, body = init(d, nxt, "A")
        assert st == 200, body
        assert body["generation"] == 8 and body["sandboxId"] == "second"
        assert ready(d) == (200, {"initialized": True,
                                  "sandboxId": "second", "generation": 8})
        assert d.request("GET", "/metrics", headers=tok("A"))[0] == 401
        # envs replace the old ones: ONE is gone
        out = stdout_of(d, "echo $ONE-$SHARED-$TWO-$OPENSANDBOX_ID", "B")
        assert out == "-b-2-second", out


def test_env_precedence_binding_file_request():
    with tempfile.TemporaryDirectory() as tmp:
        envfile = os.path.join(tmp, "envs")
        with open(envfile, "w") as f:
            f.write("FILE=file\nBOTH=file\n")
        with Execd("--runtime-init", env={"EXECD_ENVS": envfile,
                                          "FROM_EXECD": "daemon",
                                          "OPENSANDBOX_ID": "daemon"}) as d:
            st, body = init(d, {"sandboxId": "sbx", "generation": 1,
                                "envs": {"FILE": "bound", "BOTH": "bound",
                                         "BOUND": "bound",
                                         "FROM_EXECD": "bound"}})
            assert st == 200, body
            out = stdout_of(d, "echo $FILE $BOTH $BOUND $FROM_EXECD "
                            "$OPENSANDBOX_ID", envs={
                                "BOTH": "request",
                                "OPENSANDBOX_ID": "request"})
            # binding < EXECD_ENVS < request; the sandbox id is the bound
            assert out == "file request bound bound sbx", out


def bg_running(d, token):
    st, _, data = d.request("POST", "/command", headers=tok(token), body={
        "command": "sleep 300", "background": True})
    assert st == 200, data
    cid = events(data)[0]["text"]

    def running():
        st, body = d.get_json("/command/status/" + cid, headers=tok(token))
        assert st == 200, body
        return body["running"]
    return running


def test_preserve_runtime_state_keeps_running_work_and_reinit_ends_it():
    with Execd("--runtime-init") as d:
        assert init(d, {"sandboxId": "s", "generation": 1,
                        "accessTokenHash": digest("k")})[0] == 200
        running = bg_running(d, "k")
        assert running()
        st, body = init(d, {"sandboxId": "s", "generation": 2,
                            "accessTokenHash": digest("k"),
                            "preserveRuntimeState": True}, "k")
        assert st == 200, body
        assert running(), "preserveRuntimeState stopped a command"
        st, body = init(d, {"sandboxId": "s", "generation": 3,
                            "accessTokenHash": digest("k")}, "k")
        assert st == 200, body
        assert wait_for(lambda: not running(), 20), "still running"


def test_reinit_refused_where_no_token_can_prove_the_caller():
    with Execd("--runtime-init") as d:
        assert init(d, {"sandboxId": "s", "generation": 1})[0] == 200
        st, body = init(d, {"sandboxId": "evil", "generation": 2,
                            "accessTokenHash": digest("mine")})
        assert st == 409 and body["code"] == "ALREADY_INITIALIZED", body
        assert ready(d)[1]["sandboxId"] == "s"
        assert d.request("GET", "/metrics")[0] == 200
    # without --runtime-init execd is initialised from the start
    with Execd() as d:
        st, body = init(d, {"sandboxId": "evil", "generation": 1,
                            "accessTokenHash": digest("mine")})
        assert st == 409, body
        assert d.request("GET", "/metrics")[0] == 200
    with Execd("--access-token", "legacy") as d:
        st, body = init(d, {"sandboxId": "evil", "generation": 1,
                            "accessTokenHash": digest("mine")})
        assert st == 401, body
        st, body = init(d, {"sandboxId": "ok", "generation": 1,
                            "accessTokenHash": digest("new")}, "legacy")
        assert st == 200, body
        assert d.request("GET", "/metrics", headers=tok("new"))[0] == 200
        assert d.request("GET", "/metrics", headers=tok("legacy"))[0] == 401


BAD = [
    (b"", "invalid runtime init request: EOF"),
    (b"{", "invalid runtime init request: "),
    (b"[1]", "invalid runtime init request: "),
    (b'{"sandboxId":5,"generation":1}', "invalid runtime init request: "
     "sandboxId must be a string"),
    (b'{"sandboxId":"s","generation":"1"}', "invalid runtime init "
     "request: generation must be an unsigned integer"),
    (b'{"sandboxId":"s","generation":1.5}', "invalid runtime init "
     "request: generation"),
    (b'{"sandboxId":"s","generation":-1}', "invalid runtime init "
     "request: generation"),
    (b'{"sandboxId":"s","generation":1,"envs":{"A":1}}',
     "invalid runtime init request: envs"),
    (b'{"sandboxId":"s","generation":1,"envs":[]}',
     "invalid runtime init request: envs must be an object"),
    (b'{"sandboxId":"s","generation":1,"preserveRuntimeState":"yes"}',
     "invalid runtime init request: preserveRuntimeState"),
    (b'{"sandboxId":"s","generation":1,"lifecycle":[]}',
     "invalid runtime init request: lifecycle"),
    (b'{"sandboxId":"s","generation":1,"telemetry":{"attributes":{"a":2}}}',
     "invalid runtime init request: telemetry.attributes"),
    (b'{"generation":1}', "sandboxId must not be blank"),
    (b'{"sandboxId":"  ","generation":1}', "sandboxId must not be blank"),
    (json.dumps({"sandboxId": "x" * 129, "generation": 1}).encode(),
     "sandboxId must not exceed 128 characters"),
    (b'{"sandboxId":"s"}', "generation must be a positive integer"),
    (b'{"sandboxId":"s","generation":0}',
     "generation must be a positive integer"),
    (b'{"sandboxId":"s","generation":1,"entrypointPolicy":"later"}',
     'entrypointPolicy must be "keep" or "restart"'),
    (b'{"sandboxId":"s","generation":1,"accessTokenHash":"abc"}',
     "access token hash must use sha256:<hex> format"),
    (b'{"sandboxId":"s","generation":1,"accessTokenHash":"SHA256:00"}',
     "access token hash must use sha256:<hex> format"),
    (b'{"sandboxId":"s","generation":1,"accessTokenHash":"sha256:zz"}',
     "access token hash is not valid hex: "),
    (b'{"sandboxId":"s","generation":1,"accessTokenHash":"sha256:abc"}',
     "access token hash is not valid hex: "),
    (b'{"sandboxId":"s","generation":1,"accessTokenHash":"sha256:abcd"}',
     "access token hash must be 32 hex bytes, got 2"),
    (json.dumps({"sandboxId": "s", "generation": 1, "accessTokenHash":
                 "sha256:" + "ab" * 33}).encode(),
     "access token hash must be 32 hex bytes, got 33"),
    (b'{"sandboxId":"s","generation":1,"envs":{"":"x"}}',
     "envs must not contain blank keys"),
    (b'{"sandboxId":"s","generation":1,"envs":{"execd_envs":"x"}}',
     'env key "execd_envs" is reserved by execd and must not be set via '
     '/internal/init'),
    (json.dumps({"sandboxId": "s", "generation": 1,
                 "envs": {"K" * 257: "v"}}).encode(),
     "must not exceed 256 characters"),
    (json.dumps({"sandboxId": "s", "generation": 1, "telemetry": {
        "attributes": {"k%d" % i: "v" for i in range(65)}}}).encode(),
     "telemetry attributes must not exceed 64 entries"),
]


def test_bad_bodies_are_refused_and_change_nothing():
    with Execd("--runtime-init") as d:
        for raw, msg in BAD:
            st, h, data = d.request("POST", "/internal/init", body=raw,
                                    headers={"Content-Type":
                                             "application/json"})
            assert st == 400, (raw, st, data)
            body = json.loads(data)
            assert body["code"] == "INVALID_REQUEST_BODY", body
            assert body["message"].startswith(msg) or (
                msg in body["message"]), (raw, body, msg)
        assert ready(d) == (503, {"initialized": False})
        assert d.request("GET", "/metrics")[0] == 503
        # unknown fields are ignored, as upstream's decoder does
        st, body = init(d, {"sandboxId": "s", "generation": 1,
                            "somethingNew": {"x": 1},
                            "entrypointPolicy": "restart"})
        assert st == 200, body
        assert "warning" not in body, body


# --- lifecycle hooks ---

def lines(path):
    try:
        with open(path) as f:
            return f.read().split()
    except FileNotFoundError:
        return []


def hooked(tmp, lifecycle, *args, **env):
    e = {"OPENSANDBOX_LIFECYCLE": json.dumps(lifecycle),
         "EXECD_LIFECYCLE_CONFIG": os.path.join(tmp, "saved.json")}
    e.update(env)
    return Execd(*args, env=e)


def test_pre_start_comes_before_ready_and_logs_its_output():
    with tempfile.TemporaryDirectory() as tmp:
        go, out = os.path.join(tmp, "go"), os.path.join(tmp, "out")
        pre = ["sh", "-c", "echo pre-out; echo pre-err >&2; "
               "while [ ! -e %s ]; do sleep 0.05; done; echo pre >> %s"
               % (go, out)]
        tick = ["sh", "-c", "echo tick >> %s" % out]
        with hooked(tmp, {"preStart": {"command": pre},
                          "periodic": [{"name": "t", "schedule": "@every 1s",
                                        "command": tick}]}) as d:
            assert ready(d) == (503, {"initialized": False})
            assert wait_for(lambda: "hook preStart stdout: pre-out" in
                            d.read_log(), 10), d.read_log()
            assert "hook preStart stderr: pre-err" in d.read_log()
            assert lines(out) == [], "a periodic hook ran before preStart"
            open(go, "w").close()
            assert wait_for(lambda: ready(d)[0] == 200, 10)
            assert wait_for(lambda: len(lines(out)) >= 3, 15), lines(out)
            got = lines(out)
            assert got[0] == "pre" and set(got[1:]) == {"tick"}, got
            # the hooks' configuration was taken out of execd's env
            env = stdout_of(d, "env")
            assert "OPENSANDBOX_LIFECYCLE" not in env, env
        saved = os.path.join(tmp, "saved.json")
        assert os.stat(saved).st_mode & 0o777 == 0o600
        # started again without the variable: the saved hooks run
        os.unlink(out)
        with Execd(env={"EXECD_LIFECYCLE_CONFIG": saved}) as d:
            assert wait_for(lambda: "pre" in lines(out), 10), d.read_log()
            assert wait_for(lambda: ready(d)[0] == 200, 10)


def test_a_failing_pre_start_stops_execd():
    with tempfile.TemporaryDirectory() as tmp:
        d = hooked(tmp, {"preStart": {"command": [
            "sh", "-c", "sleep 0.5; exit 3"]}})
        d.start()
        assert ready(d)[0] == 503
        d.proc.wait(20)
        assert d.proc.returncode == 1, d.read_log()
        assert "exited with status 3" in d.read_log(), d.read_log()


def test_a_bad_template_lifecycle_is_refused_at_start():
    with tempfile.TemporaryDirectory() as tmp:
        d = hooked(tmp, {"periodic": [{"name": "x", "schedule": "@every 1.5s",
                                       "command": ["true"]}]})
        try:
            d.start(timeout=5)
            raise AssertionError("started with a bad lifecycle")
        except AssertionError as e:
            assert "whole number of seconds" in str(e), e
        assert d.proc.wait(5) == 1


def test_init_runs_the_hooks_in_order_with_its_environment():
    with tempfile.TemporaryDirectory() as tmp:
        out, envfile = os.path.join(tmp, "out"), os.path.join(tmp, "envs")
        with open(envfile, "w") as f:
            f.write("FROM_FILE=file\n")
        template = {"preStart": {"command": ["sh", "-c",
                                             "echo template >> " + out]}}
        pre = ["sh", "-c", 'echo "pre:$BOUND:$FROM_FILE:$OPENSANDBOX_ID:'
               '${EXECD_ENVS:+set}:${OPENSANDBOX_LIFECYCLE:-unset}" >> '
               + out + "; grep NoNewPrivs /proc/self/status >> " + out]
        with hooked(tmp, template, "--runtime-init",
                    EXECD_ENVS=envfile) as d:
            assert lines(out) == [], "hooks ran before the init"
            st, body = init(d, {
                "sandboxId": "sb", "generation": 1,
                "envs": {"BOUND": "b"},
                "lifecycle": {"preStart": {"command": pre},
                              "periodic": [{"name": "p",
                                            "schedule": "@every 1s",
                                            "command": ["sh", "-c",
                                                        "echo tick >> "
                                                        + out]}]}})
            assert st == 200, body
            got = lines(out)
            # preStart ran, under the command sandbox, before the answer;
            # execd's configuration names (EXECD_ENVS too) are not its
            assert got[:3] == ["pre:b:file:sb::unset", "NoNewPrivs:",
                               "1"], got
            assert wait_for(lambda: "tick" in lines(out), 10), lines(out)
            nnp = stdout_of(d, "grep NoNewPrivs /proc/self/status")
            assert nnp.split() == ["NoNewPrivs:", "1"], nnp
            # a re-init without lifecycle takes the template's hooks
            st, body = init(d, {"sandboxId": "sb", "generation": 2}, None)
            assert st == 409, body      # no token in force: refused
        with hooked(tmp, template, "--runtime-init") as d:
            os.unlink(out)
            assert init(d, {"sandboxId": "sb", "generation": 1})[0] == 200
            assert lines(out) == ["template"], lines(out)


def test_periodic_runs_never_overlap():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        slow = ["sh", "-c", "echo start >> %s; sleep 2.5; echo end >> %s"
                % (out, out)]
        with Execd("--runtime-init") as d:
            st, body = init(d, {"sandboxId": "s", "generation": 1,
                                "lifecycle": {"periodic": [{
                                    "name": "slow", "schedule": "@every 1s",
                                    "command": slow}]}})
            assert st == 200, body
            assert wait_for(lambda: lines(out).count("end") >= 2, 30), \
                lines(out)
            got = lines(out)
            for i, w in enumerate(got):
                assert w == ("start" if i % 2 == 0 else "end"), got
            assert "hook slow: skipped" in d.read_log(), d.read_log()


def test_a_hook_that_never_ends_is_stopped_at_its_timeout():
    with Execd("--runtime-init") as d:
        st, body = init(d, {"sandboxId": "s", "generation": 1,
                            "lifecycle": {"preStart": {
                                "command": ["sh", "-c", "trap '' TERM; "
                                            "sleep 1000 & wait"],
                                "timeoutSeconds": 1}}})
        assert st == 500, body
        assert body["code"] == "RUNTIME_ERROR", body
        assert body["message"] == ("runtime init preStart: timed out "
                                    "after 1 s"), body
        assert ready(d)[0] == 503
        assert d.request("GET", "/metrics")[0] == 503
        assert wait_for(lambda: "sleep 1000" not in stdout_ps(), 10), \
            stdout_ps()
        # no token was bound: the control plane may try again
        st, body = init(d, {"sandboxId": "s", "generation": 2,
                            "lifecycle": {}})
        assert st == 200, body
        assert d.request("GET", "/metrics")[0] == 200


def stdout_ps():
    import subprocess
    return subprocess.run(["ps", "-eo", "args"], capture_output=True,
                          text=True).stdout


def test_bad_lifecycle_in_an_init_changes_nothing():
    with Execd("--runtime-init") as d:
        for lc, msg in [
                ({"version": 2}, "unsupported lifecycle config version 2"),
                ({"preStart": {"command": []}},
                 "preStart command must not be empty"),
                ({"preStart": {"command": [" "]}},
                 "preStart command must not be empty"),
                ({"preStart": {"command": ["x"], "timeoutSeconds": -1}},
                 "preStart timeoutSeconds must not be negative"),
                ({"periodic": [{"name": " ", "schedule": "@hourly",
                                "command": ["x"]}]},
                 "periodic hook name must not be blank"),
                ({"periodic": [{"name": "a", "schedule": "@hourly",
                                "command": ["x"]},
                               {"name": " a ", "schedule": "@daily",
                                "command": ["x"]}]},
                 'duplicate periodic hook name "a"'),
                ({"periodic": [{"name": "a", "schedule": "",
                                "command": ["x"]}]},
                 'periodic hook "a" schedule must not be blank'),
                ({"periodic": [{"name": "a", "schedule": "61 * * * *",
                                "command": ["x"]}]},
                 'periodic hook "a" has invalid schedule: end of range '
                 '(61) above maximum (59)'),
                ({"periodic": [{"name": "a", "schedule": "* * * *",
                                "command": ["x"]}]},
                 'periodic hook "a" has invalid schedule: expected '
                 'exactly 5 fields, found 4'),
                ({"periodic": [{"name": "a", "schedule": "@every 500ms",
                                "command": ["x"]}]},
                 'periodic hook "a" @every interval must be a whole '
                 'number of seconds'),
                ({"periodic": [{"name": "a", "schedule": "@hourly",
                                "command": []}]},
                 "periodic a command must not be empty")]:
            st, body = init(d, {"sandboxId": "s", "generation": 1,
                                "lifecycle": lc})
            assert st == 400, (lc, body)
            assert body["message"].startswith("invalid lifecycle: " + msg), \
                (lc, body)
        assert ready(d) == (503, {"initialized": False})


def test_sessions_and_terminals_get_the_binding_environment():
    import test_pty_ws as ptyws
    from test_session import new_session, run, lines as slines
    with tempfile.TemporaryDirectory() as tmp:
        envfile = os.path.join(tmp, "envs")
        with open(envfile, "w") as f:
            f.write("BOTH=file\n")
        with Execd("--runtime-init", env={"EXECD_ENVS": envfile}) as d:
            st, body = init(d, {"sandboxId": "sbx", "generation": 1,
                                "envs": {"BOUND": "b", "BOTH": "bound"}})
            assert st == 200, body
            sid = new_session(d)
            st, evs = run(d, sid, "echo $BOUND-$BOTH-$OPENSANDBOX_ID")
            assert st == 200, evs
            assert "".join(slines(evs)).strip() == "b-file-sbx", evs
            # a terminal, as upstream's: without execd's configuration
            st, _, data = d.request("POST", "/pty", body={
                "command": "echo term-$BOUND-$BOTH-$OPENSANDBOX_ID-"
                           "${EXECD_ENVS:-none}; sleep 5"})
            assert st in (200, 201), data
            c = ptyws.Conn(d, json.loads(data)["session_id"])
            seen = b""
            deadline = time.monotonic() + 15
            want = b"term-b-file-sbx-none"
            while want not in seen and time.monotonic() < deadline:
                fin, op, p = c.read(max(0.1, deadline - time.monotonic()))
                assert op != 8, (p, seen)
                seen += p
            c.close()
            assert want in seen, seen
