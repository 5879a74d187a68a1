"""The terminal routes as upstream's 1.1 spec models them: POST /pty is
201 {"session_id"} (501 NOT_SUPPORTED where no terminal can be made),
GET /pty/{id} has session_id, running and output_offset, DELETE ends it.
The WebSocket itself is test_pty_ws.py's and the SDK harness's."""
import json
import os
import re
import tempfile

from lib import Execd, expect_error

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
                     r"[0-9a-f]{12}$")


def test_create_get_delete_as_the_spec_has_them():
    with Execd() as d:
        for body in ({}, None, {"cwd": "/tmp"}, {"command": "echo hi"}):
            st, h, data = d.request("POST", "/pty", body=body)
            assert st == 201, (body, st, data)
            assert h["content-type"].startswith("application/json"), h
            obj = json.loads(data)
            assert list(obj) == ["session_id"], obj
            assert UUID_RE.match(obj["session_id"]), obj
        tid = obj["session_id"]
        # No shell before a client attaches; all three fields, typed.
        st, h, data = d.request("GET", "/pty/" + tid)
        assert st == 200, data
        obj = json.loads(data)
        assert obj["session_id"] == tid, obj
        assert obj["running"] is False, obj
        assert type(obj["output_offset"]) is int and \
            obj["output_offset"] == 0, obj
        st, h, data = d.request("DELETE", "/pty/" + tid)
        assert st == 200, data
        for method in ("GET", "DELETE"):
            st, h, data = d.request(method, "/pty/" + tid)
            expect_error(st, data, 404)
        # A body that is not an object is refused, not taken as empty.
        st, h, data = d.request("POST", "/pty", body=[1])
        expect_error(st, data, 400, "INVALID_REQUEST_BODY")


def test_no_terminal_is_501_not_supported():
    if os.geteuid() != 0:
        return          # needs a mount namespace to hide /dev/ptmx
    # execd in a mount namespace where /dev/ptmx (and devpts' own ptmx)
    # is an empty regular file: no pseudo-terminal can be made there.
    fd, empty = tempfile.mkstemp(prefix="execd-noptmx-")
    os.close(fd)
    wrap = ("exec unshare --mount sh -c 'mount --make-rprivate / && "
            "mount --bind %s /dev/ptmx && "
            "{ ! [ -e /dev/pts/ptmx ] || mount --bind %s /dev/pts/ptmx; "
            "} && exec \"$@\"' sh" % (empty, empty))
    try:
        with Execd(wrapper=wrap) as d:
            st, h, data = d.request("POST", "/pty", body={})
            expect_error(st, data, 501, "NOT_SUPPORTED")
            assert "terminal" in json.loads(data)["message"], data
            # Nothing was registered, and the rest of execd works.
            assert d.request("GET", "/ping")[0] == 200
            st, h, data = d.request("POST", "/command",
                                    body={"command": "echo ok"})
            assert st == 200 and b'"ok"' in data, data
    finally:
        os.unlink(empty)
