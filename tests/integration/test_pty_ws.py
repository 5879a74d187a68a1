"""The terminal WebSocket's framing (RFC 6455) against frames written here
by hand, independently of execd's codec: a fragmented stdin message with
a ping between its fragments, the close handshake, and the close codes
for broken rules (1002), bad UTF-8 (1007) and a message too big (1009)."""
import base64
import json
import os
import socket
import struct
import time

from lib import Execd

MASK = b"\x5a\x17\xc3\x81"


def frame(op, payload, fin=True, masked=True):
    """One client frame: masked, with the shortest length form."""
    b0 = (0x80 if fin else 0) | op
    m = 0x80 if masked else 0
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", b0, m | n)
    elif n <= 0xffff:
        head = struct.pack("!BBH", b0, m | 126, n)
    else:
        head = struct.pack("!BBQ", b0, m | 127, n)
    if not masked:
        return head + payload
    return head + MASK + bytes(c ^ MASK[i % 4] for i, c in enumerate(payload))


class Conn:
    """A raw WebSocket client on /pty/{id}/ws."""

    def __init__(self, d, tid):
        self.s = socket.create_connection((d.host, d.port), 10)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET /pty/%s/ws HTTP/1.1\r\nHost: x\r\n"
                        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: %s\r\n"
                        "Sec-WebSocket-Version: 13\r\n\r\n"
                        % (tid, key)).encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.s.recv(4096)
            assert chunk, "closed during the handshake"
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 101"), head

    def need(self, n, deadline):
        while len(self.buf) < n:
            self.s.settimeout(max(0.1, deadline - time.monotonic()))
            chunk = self.s.recv(65536)
            assert chunk, "closed with no close frame"
            self.buf += chunk

    def read(self, timeout=10):
        """The next frame from the server: (fin, opcode, payload)."""
        deadline = time.monotonic() + timeout
        self.need(2, deadline)
        b0, b1 = self.buf[0], self.buf[1]
        assert b1 & 0x80 == 0, "a server frame was masked"
        assert b0 & 0x70 == 0, "reserved bits set"
        n, at = b1 & 0x7f, 2
        if n == 126:
            self.need(4, deadline)
            n, at = struct.unpack("!H", self.buf[2:4])[0], 4
        elif n == 127:
            self.need(10, deadline)
            n, at = struct.unpack("!Q", self.buf[2:10])[0], 10
        self.need(at + n, deadline)
        payload = self.buf[at:at + n]
        self.buf = self.buf[at + n:]
        return bool(b0 & 0x80), b0 & 0x0f, payload

    def until(self, op, timeout=10):
        """Frames up to the first of opcode op; (skipped, payload)."""
        skipped = []
        deadline = time.monotonic() + timeout
        while True:
            fin, o, p = self.read(max(0.1, deadline - time.monotonic()))
            if o == op:
                return skipped, p
            assert o != 8, "closed early: %r" % p
            skipped.append((o, p))

    def close(self):
        self.s.close()


def new_terminal(d):
    st, h, data = d.request("POST", "/pty", body={})
    assert st in (200, 201), data
    return json.loads(data)["session_id"]


def connected(d):
    c = Conn(d, new_terminal(d))
    fin, op, p = c.read()
    assert op == 1 and json.loads(p)["type"] == "connected", p
    return c


def test_pty_ws_fragments_ping_and_close_handshake():
    with Execd() as d:
        c = connected(d)
        try:
            # stdin in three fragments, a ping between the first two.
            c.s.sendall(frame(2, b"\x00echo $((6", fin=False) +
                        frame(9, b"are you there") +
                        frame(0, b"*7))", fin=False) +
                        frame(0, b"\n"))
            skipped, pong = c.until(10)
            assert pong == b"are you there"
            out = b"".join(p[1:] for o, p in skipped if o == 2)
            deadline = time.monotonic() + 10
            while b"42" not in out and time.monotonic() < deadline:
                fin, op, p = c.read()
                assert op != 8, p
                if op == 2 and p[:1] == b"\x01":
                    out += p[1:]
            assert b"42" in out, out
            # Our close is answered with a close of the same code.
            c.s.sendall(frame(8, struct.pack("!H", 1000) + b"bye"))
            skipped, p = c.until(8)
            assert struct.unpack("!H", p[:2])[0] == 1000, p
        finally:
            c.close()


def close_code_for(d, data):
    """Send data after `connected`; the code of the server's close."""
    c = connected(d)
    try:
        c.s.sendall(data)
        skipped, p = c.until(8)
        assert len(p) >= 2, p
        return struct.unpack("!H", p[:2])[0]
    finally:
        c.close()


def test_pty_ws_broken_rules_get_their_close_codes():
    with Execd() as d:
        assert close_code_for(d, frame(2, b"\x00x", masked=False)) == 1002
        rsv1 = bytearray(frame(2, b"\x00x"))
        rsv1[0] |= 0x40
        assert close_code_for(d, bytes(rsv1)) == 1002
        assert close_code_for(d, frame(0, b"x")) == 1002
        assert close_code_for(d, frame(9, b"x", fin=False)) == 1002
        assert close_code_for(d, frame(1, b"{\"type\":\"\xc3(\"}")) == 1007
        # A header that announces 2 MiB is refused before its payload.
        big = struct.pack("!BBQ", 0x82, 0xff, 2 << 20) + MASK
        assert close_code_for(d, big) == 1009
        # ... and so is a fragment past 1 MiB: 16 of 64 KiB fit, then
        # the header of one byte more (nothing is left unread).
        part = b"\x00" + b"x" * 65535
        frags = frame(2, part, fin=False) + b"".join(
            frame(0, part, fin=False) for _ in range(15))
        frags += struct.pack("!BB", 0x00, 0x81) + MASK
        assert close_code_for(d, frags) == 1009
