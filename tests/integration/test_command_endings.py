"""Line terminators in the texts of a foreground command's output events.

Upstream 1.1.1 (#2033) keeps them, so that a stream's texts put together
are its output; upstream 1.0 (and the TypeScript SDK 0.1 and 1.0 suites)
strip them, one event per line, a blank line as "\\n".  execd serves both:
"line_endings" in the request ("keep" or "strip"), else --line-endings,
else (auto) keep for an OpenSandbox SDK of 1.1.1 or later by its
User-Agent, strip for any other client.  Each case below runs both ways
and checks the texts against the output the shell wrote."""
import json
import os
import re
import shutil
import tempfile
import time

from lib import Execd, events, expect_error, wait_for

# (shell command, stdout bytes, stderr bytes)
CASES = [
    (r"printf 'a\n\nb\n\n\nc\n'", b"a\n\nb\n\n\nc\n", b""),
    (r"printf 'x\r\ny\r\n\r\n\r\nz\r\n'", b"x\r\ny\r\n\r\n\r\nz\r\n", b""),
    (r"printf 'line1\nprog 10%%\rprog 20%%\rprog 30%%\nlast\n'",
     b"line1\nprog 10%\rprog 20%\rprog 30%\nlast\n", b""),
    (r"printf '\r\r\n\n\r'", b"\r\r\n\n\r", b""),
    # A "\r\n" whose halves come apart in time.
    (r"printf 'p\r'; sleep 0.4; printf '\nq\n'", b"p\r\nq\n", b""),
    (r"printf 'one\ntwo'; printf 'e1\n\ne2' >&2", b"one\ntwo", b"e1\n\ne2"),
    (r"printf 'ok\377\376\n\303(x\nend\377'", b"ok\xff\xfe\n\xc3(x\nend\xff",
     b""),
    ("head -c 100000 /dev/zero | tr '\\0' x; echo; printf 'tail'",
     b"x" * 100000 + b"\ntail", b""),
]


def run(d, command, headers=None, path="/command", **body):
    body["code" if path == "/code" else "command"] = command
    st, h, data = d.request("POST", path, body=body, headers=headers,
                            timeout=30)
    assert st == 200, (st, data)
    evs = events(data)
    assert evs[-1]["type"] == "execution_complete", evs[-3:]
    return evs


def texts(evs, kind):
    return [e["text"] for e in evs if e["type"] == kind]


def as_text(b):
    """What a JSON string can say of output bytes: UTF-8, each invalid
    byte as U+FFFD (the cases use no sequence where the rules differ)."""
    return b.decode("utf-8", "replace")


def stripped(b):
    """Upstream 1.0's lines of output b: "\\n", "\\r" and "\\r\\n" end a line
    and are dropped, a blank line is "\\n", an unterminated rest is the
    last line."""
    out, line, i = [], b"", 0
    while i < len(b):
        c = b[i:i + 1]
        if c in (b"\n", b"\r"):
            out.append(as_text(line) or "\n")
            line = b""
            if b[i:i + 2] == b"\r\n":
                i += 1
        else:
            line += c
        i += 1
    if line:
        out.append(as_text(line))
    return out


def check_keep(evs, out, err):
    o, e = texts(evs, "stdout"), texts(evs, "stderr")
    assert "".join(o) == as_text(out), (o, out)
    assert "".join(e) == as_text(err), (e, err)
    # One event per line, each with its terminator, none empty.
    for t in o + e:
        assert t and not re.search(r"[\r\n].", t.replace("\r\n", "\n")), o


def check_strip(evs, out, err):
    assert texts(evs, "stdout") == stripped(out), (evs, out)
    assert texts(evs, "stderr") == stripped(err), (evs, err)


def numbers_rise(evs):
    seqs = [e["seq"] for e in evs if "seq" in e]
    return seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_both_framings_of_every_case():
    with Execd() as d:
        for cmd, out, err in CASES:
            keep = run(d, cmd, line_endings="keep")
            check_keep(keep, out, err)
            strip = run(d, cmd, line_endings="strip")
            check_strip(strip, out, err)
            assert numbers_rise(keep) and numbers_rise(strip), cmd
            # No field request: a client that names no SDK gets lines.
            check_strip(run(d, cmd), out, err)
            # POST /code without a language is the same stream.
            check_keep(run(d, cmd, path="/code", line_endings="keep"),
                       out, err)


def test_the_sdk_version_chooses_when_the_request_does_not():
    cmd, out, err = CASES[1]
    keeps = ["OpenSandbox-Python-SDK/1.1.1", "OpenSandbox-JS-SDK/1.1.2",
             "OpenSandbox-Go-SDK/2.0.0 (linux)",
             "python-httpx/0.27 OpenSandbox-Kotlin-SDK/1.10.0"]
    strips = ["OpenSandbox-JS-SDK/0.1.11", "OpenSandbox-Python-SDK/1.1.0",
              "OpenSandbox-Python-SDK/1.1.1-rc.1",
              "OpenSandbox-Python-SDK/0.1.17.dev0", "python-requests/2.31",
              "NotOpenSandbox-JS-SDK/1.1.1", "OpenSandbox-JS/1.1.1",
              "OpenSandbox-JS-SDK/", "curl/8.0"]
    with Execd() as d:
        for ua in keeps:
            check_keep(run(d, cmd, headers={"User-Agent": ua}), out, err)
        for ua in strips:
            check_strip(run(d, cmd, headers={"User-Agent": ua}), out, err)
        # The request's field goes over the version, both ways.
        check_strip(run(d, cmd, headers={"User-Agent": keeps[0]},
                        line_endings="strip"), out, err)
        check_keep(run(d, cmd, headers={"User-Agent": strips[0]},
                       line_endings="keep"), out, err)


def test_the_daemon_option_goes_over_the_sdk_version():
    cmd, out, err = CASES[0]
    new = {"User-Agent": "OpenSandbox-Python-SDK/1.1.1"}
    with Execd("--line-endings", "keep") as d:
        check_keep(run(d, cmd), out, err)
        check_strip(run(d, cmd, line_endings="strip"), out, err)
    with Execd(env={"EXECD_LINE_ENDINGS": "strip"}) as d:
        check_strip(run(d, cmd, headers=new), out, err)
        check_keep(run(d, cmd, headers=new, line_endings="keep"), out, err)


def test_a_bad_value_is_400_before_anything_runs():
    tmp = tempfile.mkdtemp(prefix="execd-endings-")
    mark = os.path.join(tmp, "ran")
    try:
        with Execd() as d:
            for bad in ("crlf", "", 1, True, ["keep"]):
                for path in ("/command", "/code"):
                    key = "code" if path == "/code" else "command"
                    st, h, data = d.request(
                        "POST", path, body={key: "touch " + mark,
                                            "line_endings": bad})
                    expect_error(st, data, 400, "INVALID_REQUEST_BODY")
                    assert "line_endings" in json.loads(data)["message"]
            time.sleep(0.3)
            assert not os.path.exists(mark)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_a_reattached_stream_chooses_for_itself():
    cmd, out, err = CASES[4]
    with Execd() as d:
        evs = run(d, cmd, line_endings="keep")
        cid = evs[0]["text"]

        def again(query="", headers=None):
            st, h, data = d.request("GET", "/command/%s/stream%s"
                                    % (cid, query), headers=headers)
            assert st == 200, data
            return events(data)
        check_strip(again(), out, err)
        check_keep(again("?line_endings=keep"), out, err)
        check_keep(again(headers={
            "User-Agent": "OpenSandbox-Python-SDK/1.1.1"}), out, err)
        # The same events as the original stream (pings are each one's).
        assert [e for e in again("?line_endings=keep")
                if e["type"] != "ping"] == \
            [e for e in evs if e["type"] != "ping"]
        # From a number on: the split "\r\n" is skipped by a stripping
        # reader that saw its "\r", given as "\n" to one that did not.
        keep = again("?line_endings=keep")
        lone = [e["seq"] for e in keep if e.get("text") == "\n"]
        assert lone, keep
        tail = again("?after=%d" % (lone[0] - 1))
        assert texts(tail, "stdout") == ["\n", "q"], tail
        st, h, data = d.request("GET", "/command/%s/stream?line_endings=lf"
                                % cid)
        expect_error(st, data, 400, "INVALID_REQUEST_BODY")


def test_background_commands_and_sessions_keep_upstreams_lines():
    # Upstream changed only foreground /command: a background command's
    # stream (from its output file) and session runs stay lines.
    new = {"User-Agent": "OpenSandbox-Python-SDK/1.1.1"}
    with Execd("--line-endings", "keep") as d:
        evs = run(d, r"printf 'a\r\nb\n'", background=True, headers=new)
        cid = evs[0]["text"]
        assert wait_for(lambda: json.loads(d.request(
            "GET", "/command/status/" + cid)[2])["running"] is False, 10)
        st, h, data = d.request("GET", "/command/%s/stream" % cid,
                                headers=new)
        assert texts(events(data), "stdout") == ["a", "b"], data
        st, h, data = d.request("POST", "/session", body={})
        sid = json.loads(data)["session_id"]
        st, h, data = d.request("POST", "/session/%s/run" % sid,
                                body={"command": r"printf 'a\nb\n'"},
                                headers=new)
        assert texts(events(data), "stdout") == ["a", "b"], data
