#!/usr/bin/python3
"""Write the HMAC-SHA256 vectors and wire messages that t_kp_sign and
t_kp_wire check kernelproto against.

Run from anywhere; the files are written beside this script:

  vectors.json   key, parts and the hex signature Python's hmac computes
                 (as jupyter_client.session.Session.sign does);
  messages.json  whole multipart messages, framed as Session.serialize
                 frames them, with the frames in hex and what a decoder
                 must find in them;

and the seeds of tests/fuzz/corpus/kp_wire/, in fuzz_kp_wire.c's format.

Standard library only (hmac, hashlib, json), and no randomness: running
it again must give the same bytes, so the output is committed.
"""

import hashlib
import hmac
import json
import os

DELIM = b"<IDS|MSG>"

# Keys as Jupyter uses them (text, encoded to UTF-8), plus the edge cases
# of HMAC itself: empty, short, exactly one SHA-256 block (64 bytes, here
# 64 hex digits), one over, much longer than a block (hashed first).
KEY_HEX64 = hashlib.sha256(b"execd kernelproto test key").hexdigest()
KEYS = [
    "",
    "secret",
    KEY_HEX64,
    KEY_HEX64 + "0",
    "a0436f6c-1916-498b-8eb9-e81ab9368e84",
    "k" * 200,
    "cl\u00e9 \u2713",
]

COMPACT = (",", ":")


def pack(obj, separators=COMPACT):
    """Session's json_packer, with the separators given."""
    return json.dumps(obj, ensure_ascii=False, allow_nan=False,
                      separators=separators).encode("utf-8")


def sign(key, parts):
    """Session.sign: hex HMAC-SHA256 over the parts, or b'' unkeyed."""
    if not key:
        return b""
    h = hmac.new(key.encode("utf-8"), digestmod=hashlib.sha256)
    for p in parts:
        h.update(p)
    return h.hexdigest().encode("ascii")


def header(msg_id, msg_type, session, date):
    return {"msg_id": msg_id, "session": session, "username": "execd",
            "date": date, "msg_type": msg_type, "version": "5.3"}


EXEC_HDR = header("6f1c0e5a2b7d4c3e9a8f1b2c3d4e5f60", "execute_request",
                  "0b9a8c7d6e5f40312233445566778899",
                  "2026-11-30T09:08:57.123456Z")

PART_SETS = [
    ("execute_request", [pack(EXEC_HDR), b"{}", b"{}",
                         pack({"code": "print(1)", "silent": False,
                               "store_history": True,
                               "user_expressions": {},
                               "allow_stdin": False,
                               "stop_on_error": True})]),
    ("empty parts", [b"", b"", b"", b""]),
    ("empty objects", [b"{}", b"{}", b"{}", b"{}"]),
    ("unicode content", [b"{}", b"{}", b"{}",
                         pack({"name": "stdout",
                               "text": "h\u00e9llo, w\u00f6rld \u2713 "
                                       "\U0001f600 \u2028 \u65e5\u672c\n"})]),
    ("no parts", []),
    ("nul byte", [b"{}", b"{}", b"{}", pack({"text": "a\u0000b"})]),
]


def vectors():
    out = []
    for key in KEYS:
        for name, parts in PART_SETS:
            out.append({"name": name, "key": key,
                        "parts": [p.decode("utf-8") for p in parts],
                        "sig": sign(key, parts).decode("ascii")})
    return out


def serialize(key, hdr, parent, metadata, content, idents=(), buffers=(),
              separators=COMPACT):
    """Session.serialize: idents, delimiter, signature, parts, buffers."""
    real = [pack(hdr, separators), pack(parent, separators),
            pack(metadata, separators), pack(content, separators)]
    return (list(idents) + [DELIM, sign(key, real)] + real +
            list(buffers))


def message(name, key, frames, hdr, parent, content, nidents, nbuffers,
            reencode_identical):
    return {"name": name, "key": key,
            "frames": [f.hex() for f in frames],
            "expect": {"msg_id": hdr["msg_id"],
                       "msg_type": hdr["msg_type"],
                       "session": hdr["session"],
                       "parent_msg_id": parent.get("msg_id", ""),
                       "parent": parent, "content": content,
                       "nidents": nidents, "nbuffers": nbuffers,
                       "reencode_identical": reencode_identical}}


def messages():
    out = []
    session = "0b9a8c7d6e5f40312233445566778899"

    # A client's execute_request on a DEALER socket: no identities.
    content = {"code": "import sys; print(sys.version)", "silent": False,
               "store_history": True, "user_expressions": {},
               "allow_stdin": False, "stop_on_error": True}
    out.append(message("execute_request", KEY_HEX64,
                       serialize(KEY_HEX64, EXEC_HDR, {}, {}, content),
                       EXEC_HDR, {}, content, 0, 0, True))

    # The kernel's reply through its ROUTER: a binary identity, a parent
    # header, and jupyter_client's default separators (", " and ": ").
    hdr = header("a1b2c3d4e5f60718293a4b5c6d7e8f90", "execute_reply",
                 "5d6e7f8091a2b3c4d5e6f708192a3b4c",
                 "2026-11-30T09:08:57.234567Z")
    content = {"status": "ok", "execution_count": 7,
               "user_expressions": {}, "payload": []}
    idents = [b"\x00\x80\x00\x41\xa7", b"route-2"]
    out.append(message("execute_reply", KEY_HEX64,
                       serialize(KEY_HEX64, hdr, EXEC_HDR,
                                 {"started": "2026-11-30T09:08:57.130000Z",
                                  "dependencies_met": True,
                                  "engine": "e3b0c442"},
                                 content, idents,
                                 separators=(", ", ": ")),
                       hdr, EXEC_HDR, content, 2, 0, False))

    # An iopub stream message: topic identity, unicode text, uuid key.
    key = KEYS[4]
    hdr = header("00ff00ff00ff00ff00ff00ff00ff00ff", "stream",
                 "5d6e7f8091a2b3c4d5e6f708192a3b4c",
                 "2026-11-30T09:08:57.140000Z")
    content = {"name": "stdout",
               "text": "h\u00e9llo \u2713 \U0001f600\n\ttab \"q\" \\ /\n"}
    out.append(message("stream", key,
                       serialize(key, hdr, EXEC_HDR, {}, content,
                                 [b"kernel.5d6e7f80.stream"]),
                       hdr, EXEC_HDR, content, 1, 0, True))

    # A comm_msg with binary buffers, one of them empty.
    hdr = header("1234567890abcdef1234567890abcdef", "comm_msg",
                 session, "2026-11-30T09:08:58.000001Z")
    content = {"comm_id": "c0ffee", "data": {"method": "update",
                                             "buffer_paths": [["a"], ["b"]]}}
    buffers = [bytes(range(256)), b"", DELIM]
    out.append(message("comm_msg", KEY_HEX64,
                       serialize(KEY_HEX64, hdr, {}, {}, content, [],
                                 buffers),
                       hdr, {}, content, 0, 3, True))

    # Unkeyed (a connection file with an empty key): empty signature.
    hdr = header("fedcba9876543210fedcba9876543210", "kernel_info_request",
                 session, "2026-11-30T09:08:59.999999Z")
    out.append(message("unsigned", "",
                       serialize("", hdr, {}, {}, {}, [b"id"]),
                       hdr, {}, {}, 1, 0, True))
    return out


# Seeds for tests/fuzz/fuzz_kp_wire.c, in its input format: one mode
# byte, then the frames joined by b"\n".  Mode 'k' (bit 0 set) decodes
# with KEY_HEX64 and max_frame 1024, 'n' without a key and 4096, 'a' with
# the key and 32.  Frames here never contain b"\n".
def fuzz_input(mode, frames):
    assert all(b"\n" not in f for f in frames)
    return mode + b"\n".join(frames)


def seeds():
    k = KEY_HEX64
    exec_content = {"code": "print(1)", "silent": False}
    nested = {"a": [1, -2, 3.5, 1e-7, True, None, "x\u0000y"],
              "b": {"c": {"d": []}}, "esc": "\"\\/\b\f\r\t\u001f",
              "u": "\u00e9\u2713\U0001f600"}
    reply_hdr = header("a1b2c3d4e5f60718293a4b5c6d7e8f90", "execute_reply",
                       "5d6e7f8091a2b3c4d5e6f708192a3b4c",
                       "2026-11-30T09:08:57.234567Z")
    good = serialize(k, EXEC_HDR, {}, {}, exec_content)
    out = {
        "seed-valid": fuzz_input(b"k", good),
        "seed-valid-idents-buffers": fuzz_input(
            b"k", serialize(k, reply_hdr, EXEC_HDR, {"x": 1},
                            {"status": "ok"}, [b"\x00\x80\x00A\xa7",
                                               b"route"],
                            [b"\x00\x01\xff", b"", DELIM])),
        "seed-valid-unicode": fuzz_input(
            b"k", serialize(k, reply_hdr, EXEC_HDR, {},
                            {"name": "stdout", "text": "h\u00e9llo \u2713"},
                            [b"kernel.1.stream"], separators=(", ", ": "))),
        "seed-unkeyed-nested": fuzz_input(
            b"n", [b"id", DELIM, b"anything"] +
            [pack({}), pack(EXEC_HDR), pack({}), pack(nested)]),
        "seed-unkeyed-empty-objects": fuzz_input(
            b"n", [DELIM, b""] + [b"{}"] * 4),
        "seed-bad-signature": fuzz_input(
            b"k", good[:1] + [b"0" * 64] + good[2:]),
        "seed-upper-signature": fuzz_input(
            b"k", good[:1] + [good[1].upper()] + good[2:]),
        "seed-no-delimiter": fuzz_input(b"k", [b"<IDS|MSG"] + good[1:]),
        "seed-two-delimiters": fuzz_input(b"n", [DELIM] + [DELIM] +
                                          [b"{}"] * 4 + [DELIM]),
        "seed-short": fuzz_input(b"k", good[:-1]),
        "seed-oversized": fuzz_input(b"a", good),
        "seed-json-array": fuzz_input(
            b"n", [DELIM, b"", b"[]", b"{}", b"{}", b"{}"]),
        "seed-json-malformed": fuzz_input(
            b"n", [DELIM, b"", b"{}", b"{\"a\":", b"{}", b"{}"]),
        "seed-json-signed-array": fuzz_input(
            b"k", serialize(k, [], {}, {}, {})),
        "seed-empty": b"",
        "seed-mode-only": b"k",
    }
    return out


def write(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=True, indent=1, sort_keys=False)
        f.write("\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    write(os.path.join(here, "vectors.json"), vectors())
    write(os.path.join(here, "messages.json"), messages())
    corpus = os.path.join(here, "..", "..", "..", "fuzz", "corpus",
                          "kp_wire")
    os.makedirs(corpus, exist_ok=True)
    for name, data in seeds().items():
        with open(os.path.join(corpus, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
