"""The environment of commands and sessions as upstream 1.1 makes it: the
EXECD_ENVS dotenv file (read again each time, setEnv's appends seen at
once, sessions included), request envs over it, and $NAME, ${NAME} and ~
in a cwd expanded from those same variables."""
import json
import os
import shutil
import tempfile

from lib import Execd, events, expect_error
from test_command import assert_ok, background, finished, lines, logs, run_cmd

# One JSON line of the named variables (None when unset).
SHOW = ("import json, os, sys; print(json.dumps("
        "{k: os.environ.get(k) for k in sys.argv[1:]}))")


def show(d, names, **opts):
    st, evs = run_cmd(d, None, argv=["python3", "-c", SHOW] + names, **opts)
    assert st == 200, evs
    assert_ok(evs)
    out = lines(evs, "stdout")
    assert len(out) == 1, evs
    return json.loads(out[0])


def set_env(d, key, value):
    """What the 1.1 SDKs' commands.setEnv sends: a foreground shell command
    that appends one entry to the EXECD_ENVS file."""
    if "'" not in value:
        entry = "%s='%s'" % (key, value)
    else:
        esc = (value.replace("\\", "\\\\").replace('"', '\\"')
               .replace("\n", "\\n").replace("\t", "\\t"))
        entry = '%s="%s"' % (key, esc)
    quoted = "'" + entry.replace("'", "'\\''") + "'"
    script = (
        'if [ -z "${EXECD_ENVS:-}" ]; then printf \'%%s\\n\' '
        "'EXECD_ENVS is not set; cannot persist environment variable %s' "
        '>&2; exit 1; fi\n'
        'mkdir -p "$(dirname "$EXECD_ENVS")"\n'
        'printf \'%%s\\n\' %s >> "$EXECD_ENVS"\n' % (key, quoted))
    st, evs = run_cmd(d, script, background=False)
    assert st == 200, evs
    assert_ok(evs)


def session(d):
    st, h, data = d.request("POST", "/session", body={})
    assert st == 200, data
    return json.loads(data)["session_id"]


def srun(d, sid, command, **kw):
    st, h, data = d.request("POST", "/session/%s/run" % sid,
                            body=dict(command=command, **kw), timeout=60)
    if st != 200:
        return st, json.loads(data)
    return st, events(data)


def session_show(d, sid, names):
    st, evs = srun(d, sid, "python3 -c '%s' %s" % (SHOW, " ".join(names)))
    assert st == 200, evs
    return json.loads(lines(evs, "stdout")[0])


def test_dotenv_file_as_upstream_parses_it():
    t = tempfile.mkdtemp(prefix="execd-envs-")
    try:
        path = os.path.join(t, "env")
        with open(path, "w") as f:
            f.write("# set by the image\n"
                    "\n"
                    "EF_A=from-file\n"
                    "EF_B='single $HOME \\n kept'\n"
                    'EF_C="tab\\there \\"q\\" $HOME ${EF_NOPE}|"\n'
                    "EF_D=$HOME/x:${EF_NOPE}:$$\n"
                    "not a line\n"
                    "1BAD=x\n"
                    "EF_E=a=b=c\r\n"
                    "export EF_F=exported\n"
                    "EF_G=\n"
                    "EF_H=''\n"
                    "EF_I='line1\nline2'\n"
                    "EF_J='broken' tail\n"
                    "EF_K=  spaced # not a comment  \n"
                    "EF_L='never closed\n"
                    "EF_M=after\n")
        names = ["EF_" + c for c in "ABCDEFGHIJKLM"]
        with Execd(env={"EXECD_ENVS": path, "HOME": "/home/h"}) as d:
            got = show(d, names)
            assert got == {
                "EF_A": "from-file",
                "EF_B": "single $HOME \\n kept",
                "EF_C": 'tab\there "q" /home/h |',
                "EF_D": "/home/h/x::",
                "EF_E": "a=b=c",
                "EF_F": "exported",
                "EF_G": "",
                "EF_H": "",
                "EF_I": "line1\nline2",
                "EF_J": None,
                "EF_K": "spaced # not a comment",
                "EF_L": None,
                "EF_M": "after",
            }, got
            # The request's envs win over the file.
            got = show(d, ["EF_A"], envs={"EF_A": "from-request"})
            assert got == {"EF_A": "from-request"}
            # The file is read again for every command.
            with open(path, "w") as f:
                f.write("EF_A=changed\n")
            assert show(d, ["EF_A", "EF_B"]) == {"EF_A": "changed",
                                                 "EF_B": None}
            os.unlink(path)
            assert show(d, ["EF_A"]) == {"EF_A": None}
            # The children see where the file is (setEnv needs it).
            assert show(d, ["EXECD_ENVS"]) == {"EXECD_ENVS": path}
        # The file's path may name a variable of execd's.
        with open(path, "w") as f:
            f.write("EF_A=via-var\n")
        with Execd(env={"EXECD_ENVS": "$EF_DIR/env", "EF_DIR": t}) as d:
            assert show(d, ["EF_A"]) == {"EF_A": "via-var"}
    finally:
        shutil.rmtree(t, ignore_errors=True)


def test_set_env_reaches_commands_and_sessions():
    t = tempfile.mkdtemp(prefix="execd-envs-")
    try:
        path = os.path.join(t, "sub", "env")
        values = {"SE_A": "bar-1", "SE_B": "cost $5 ${HOME} tail",
                  "SE_C": "line1\nline2", "SE_D": "a=b=c",
                  "SE_E": "it's fine", "SE_F": '""'}
        with Execd(env={"EXECD_ENVS": path, "HOME": "/home/h"}) as d:
            sid = session(d)
            st, evs = srun(d, sid, "export SE_OWN=mine; SE_A=shell-only")
            assert st == 200, evs
            for k, v in values.items():
                set_env(d, k, v)
            names = sorted(values)
            # The next command sees every value byte for byte.
            assert show(d, names) == values
            bg = background(d, 'printf "%s" "$SE_C"')
            finished(d, bg)
            assert logs(d, bg)[0] == b"line1\nline2"
            # An open session sees them at its next run, and keeps what it
            # set itself; a new session starts with them.
            got = session_show(d, sid, names + ["SE_OWN"])
            assert got == dict(values, SE_OWN="mine"), got
            assert session_show(d, session(d), names) == values
            # A variable the session changed stays changed until the file
            # changes it again.
            st, evs = srun(d, sid, "export SE_D=session-value")
            set_env(d, "SE_G", "g")
            got = session_show(d, sid, ["SE_D", "SE_G"])
            assert got == {"SE_D": "session-value", "SE_G": "g"}, got
            set_env(d, "SE_D", "from-file-again")
            got = session_show(d, sid, ["SE_D"])
            assert got == {"SE_D": "from-file-again"}, got
    finally:
        shutil.rmtree(t, ignore_errors=True)


def test_cwd_variables_and_home():
    t = tempfile.mkdtemp(prefix="execd-cwd-")
    try:
        home = os.path.join(t, "home")
        for p in ("home/x", "work/sub", "filedir"):
            os.makedirs(os.path.join(t, p))
        envfile = os.path.join(t, "env")
        with open(envfile, "w") as f:
            f.write("FILEDIR='%s/filedir'\n" % t)
        env = {"HOME": home, "EXECD_ENVS": envfile, "DAEMON_T": t}
        with Execd(env=env) as d:
            def pwd(**opts):
                st, evs = run_cmd(d, "pwd", **opts)
                assert st == 200, evs
                assert_ok(evs)
                return lines(evs, "stdout")

            assert pwd(cwd="$HOME/x") == [home + "/x"]
            assert pwd(cwd="~") == [home]
            assert pwd(cwd="~/x") == [home + "/x"]
            assert pwd(cwd="${DAEMON_T}/work") == [t + "/work"]
            # From the request's envs: the check uses what the command gets.
            assert pwd(cwd="${WORK}/sub", envs={"WORK": t + "/work"}) == [
                t + "/work/sub"]
            assert pwd(cwd="$WORKDIR", envs={"WORKDIR": "/tmp"}) == ["/tmp"]
            # From the EXECD_ENVS file, under the request's.
            assert pwd(cwd="$FILEDIR") == [t + "/filedir"]
            assert pwd(cwd="$FILEDIR", envs={"FILEDIR": "/"}) == ["/"]
            # The request's HOME is not ~.
            assert pwd(cwd="~", envs={"HOME": "/"}) == [home]
            cid = background(d, "pwd", cwd="$HOME/x")
            finished(d, cid)
            assert logs(d, cid)[0] == (home + "/x\n").encode()

            def bad(cwd, msg, **opts):
                st, h, data = d.request("POST", "/command", body=dict(
                    command="true", cwd=cwd, **opts))
                obj = expect_error(st, data, 400, "INVALID_REQUEST_BODY")
                assert obj["message"] == msg, obj

            bad("$NOPE_B/${NOPE_A}/$NOPE_B",
                'invalid request, cannot resolve working directory '
                '"$NOPE_B/${NOPE_A}/$NOPE_B": path references undefined '
                'environment variables: NOPE_A,NOPE_B')
            bad("$WORK/x",
                'invalid request, cannot resolve working directory '
                '"$WORK/x": path references undefined environment '
                'variables: WORK')
            bad("$HOME/missing", "invalid request, working directory does "
                "not exist: $HOME/missing")
            bad("$REL", "invalid request, invalid working directory '$REL': "
                "it must be absolute or start with ~ once its variables "
                "are expanded", envs={"REL": "relative"})
            bad(envfile, "invalid request, working directory path is not a "
                "directory: " + envfile)
            # Sessions: created with the variables of their shell.
            st, h, data = d.request("POST", "/session",
                                    body={"cwd": "$FILEDIR/new"})
            assert st == 200, data
            sid = json.loads(data)["session_id"]
            assert os.path.isdir(t + "/filedir/new")
            st, evs = srun(d, sid, "pwd")
            assert lines(evs, "stdout") == [t + "/filedir/new"], evs
            st, evs = srun(d, sid, "pwd", cwd="~/x")
            assert lines(evs, "stdout") == [home + "/x"], evs
            st, obj = srun(d, sid, "pwd", cwd="$NOPE_C")
            assert st == 400, obj
            assert obj["message"] == (
                'invalid request, cannot resolve working directory '
                '"$NOPE_C": path references undefined environment '
                'variables: NOPE_C'), obj
            st, h, data = d.request("POST", "/session",
                                    body={"cwd": "${NOPE_D}"})
            obj = expect_error(st, data, 400, "INVALID_REQUEST_BODY")
            assert "NOPE_D" in obj["message"], obj
    finally:
        shutil.rmtree(t, ignore_errors=True)
