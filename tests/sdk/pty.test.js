// Interactive terminals (/pty) through a real WebSocket client, the `ws`
// package: typed input and its echo, resize, exit codes, replay on
// reconnect, takeover, a refused second writer, read-only viewers, pipe
// mode, delete, a shell that exited, the token on the upgrade, unknown ids.
// Every wait is bounded.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import WebSocket from "ws";

import { startExecd, useExecd } from "./lib/execd.js";

const WAIT_MS = 10_000;
const TOKEN = "pty-test-token-9c1e";

/** One WebSocket client of a terminal, recording every frame. */
class Term {
  constructor(url, headers = {}) {
    this.frames = []; // { kind: "bin", prefix, data } | { kind: "json", v }
    this.waiters = [];
    this.ws = new WebSocket(url, { headers });
    this.opened = new Promise((resolve, reject) => {
      this.ws.once("open", resolve);
      this.ws.once("error", reject);
      this.ws.once("unexpected-response", (req, res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (s) => (body += s));
        res.on("end", () => {
          const err = new Error(`HTTP ${res.statusCode}: ${body}`);
          err.status = res.statusCode;
          err.body = body;
          reject(err);
        });
      });
    });
    this.opened.catch(() => {}); // a test that expects a refusal awaits it
    this.closed = new Promise((resolve) => {
      this.ws.once("close", (code, reason) =>
        resolve({ code, reason: reason.toString() }));
    });
    this.ws.on("message", (data, isBinary) => {
      if (isBinary) {
        this.frames.push({ kind: "bin", prefix: data[0],
          data: Buffer.from(data.subarray(1)) });
      } else {
        this.frames.push({ kind: "json", v: JSON.parse(data.toString()) });
      }
      for (const w of this.waiters.splice(0)) w();
    });
  }

  /** Terminal (or stdout, 0x01) output so far, as text. */
  output(prefix = 0x01) {
    return Buffer.concat(this.frames.filter((f) => f.kind === "bin" &&
      f.prefix === prefix).map((f) => f.data)).toString();
  }

  /** Replay bytes plus live output, as sent. */
  allBytes() {
    return Buffer.concat(this.frames.filter((f) => f.kind === "bin" &&
      (f.prefix === 0x01 || f.prefix === 0x03)).map((f) =>
      f.prefix === 0x03 ? f.data.subarray(8) : f.data));
  }

  json(type) {
    return this.frames.filter((f) => f.kind === "json" && f.v.type === type)
      .map((f) => f.v);
  }

  /** Resolve when pred() holds; reject after WAIT_MS with what we saw. */
  async until(pred, what) {
    const deadline = Date.now() + WAIT_MS;
    while (!pred()) {
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`timed out waiting for ${what}; output ends: ` +
          JSON.stringify(this.output().slice(-300)) + " frames: " +
          JSON.stringify(this.frames.filter((f) => f.kind === "json")));
      }
      await new Promise((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  untilOutput(re, prefix = 0x01) {
    return this.until(() => re.test(this.output(prefix)), `output ${re}`);
  }

  /**
   * Wait for output matching re and then bash's next prompt, after which
   * the shell writes nothing until typed at: only then is output_offset
   * final.  The prompt comes in a write of its own, after the output.
   */
  untilPrompt(re) {
    return this.until(() => {
      const o = this.output();
      const m = re.exec(o);
      return m !== null && /[#$] $/.test(o.slice(m.index + m[0].length));
    }, `output ${re}, then a prompt`);
  }

  untilJson(type) {
    return this.until(() => this.json(type).length > 0, `a ${type} frame`);
  }

  type(s) {
    this.ws.send(Buffer.concat([Buffer.from([0x00]), Buffer.from(s)]));
  }

  send(obj) {
    this.ws.send(JSON.stringify(obj));
  }

  /** The close code and reason, within WAIT_MS. */
  async closeInfo() {
    let t;
    const timeout = new Promise((_, reject) => {
      t = setTimeout(() => reject(new Error("no close within the wait")),
        WAIT_MS);
    });
    try {
      return await Promise.race([this.closed, timeout]);
    } finally {
      clearTimeout(t);
    }
  }

  /** Close from our side and wait for the server's answer. */
  async close() {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(1000);
    return this.closeInfo();
  }
}

function wsBase(daemon) {
  return daemon.url.replace(/^http/, "ws");
}

async function api(daemon, method, path, body, headers = {}) {
  const h = { ...headers };
  if (daemon.token !== undefined) h["X-EXECD-ACCESS-TOKEN"] = daemon.token;
  const res = await fetch(daemon.url + path, {
    method,
    headers: h,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(WAIT_MS),
  });
  const text = await res.text();
  return { status: res.status, text, json: text ? JSON.parse(text) : null };
}

async function create(daemon, body = {}) {
  const r = await api(daemon, "POST", "/pty", body);
  assert.equal(r.status, 201, r.text);
  assert.match(r.json.session_id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-/);
  return r.json.session_id;
}

function connect(daemon, id, query = "") {
  const headers = daemon.token !== undefined
    ? { "X-EXECD-ACCESS-TOKEN": daemon.token } : {};
  return new Term(`${wsBase(daemon)}/pty/${id}/ws${query}`, headers);
}

/** Connect and wait for the connected frame. */
async function attach(daemon, id, query = "") {
  const t = connect(daemon, id, query);
  await t.opened;
  await t.untilJson("connected");
  return t;
}

describe("pty", () => {
  const execd = useExecd();

  it("echoes typed input, and a resize shows in stty size", async () => {
    const d = execd.daemon;
    const id = await create(d);
    const t = await attach(d, id);
    const c = t.json("connected")[0];
    assert.deepEqual(Object.keys(c), ["type", "session_id", "mode"]);
    assert.equal(c.session_id, id);
    assert.equal(c.mode, "pty");
    t.type("echo typed-$((6*7))\n");
    await t.untilOutput(/typed-\$\(\(6\*7\)\)/); // the terminal's echo
    await t.untilOutput(/typed-42/);
    t.type("stty size\n");
    await t.untilOutput(/24 80/);
    t.send({ type: "resize", cols: 123, rows: 45 });
    t.type("stty size\n");
    await t.untilOutput(/45 123/);
    t.send({ type: "ping" });
    await t.untilJson("pong");
    t.send({ type: "bogus" });
    await t.untilJson("error");
    assert.deepEqual(t.json("error")[0], { type: "error",
      error: 'unknown frame type "bogus"', code: "INVALID_FRAME" });
    t.send({ type: "stdin", data: "echo json-$((2+3))\n" });
    await t.untilOutput(/json-5/);
    const g = await api(d, "GET", `/pty/${id}`);
    assert.equal(g.status, 200);
    assert.equal(g.json.running, true);
    assert.ok(g.json.output_offset > 0);
    await t.close();
    assert.equal((await api(d, "DELETE", `/pty/${id}`)).status, 200);
  });

  it("reports the exit code and closes", async () => {
    const d = execd.daemon;
    const id = await create(d, { command: "echo bye; exit 7" });
    const g0 = await api(d, "GET", `/pty/${id}`);
    assert.deepEqual(g0.json, { session_id: id, running: false,
      output_offset: 0 });
    const t = connect(d, id);
    await t.opened;
    await t.untilJson("exit");
    assert.deepEqual(t.json("exit")[0], { type: "exit", exit_code: 7 });
    assert.match(t.output(), /bye/);
    assert.deepEqual(await t.closeInfo(), { code: 1000,
      reason: "process exited" });
    const g = await api(d, "GET", `/pty/${id}`);
    assert.equal(g.json.running, false);
    assert.equal(g.json.exit_code, 7);
  });

  it("a SIGINT frame interrupts the foreground command", async () => {
    const d = execd.daemon;
    const id = await create(d, { command: "sleep 30" });
    const t = await attach(d, id);
    t.send({ type: "signal", signal: "SIGINT" });
    await t.untilJson("exit");
    assert.equal(t.json("exit")[0].exit_code, -1);
    await t.closeInfo();
  });

  it("replays retained output on reconnect, from since", async () => {
    const d = execd.daemon;
    const id = await create(d);
    const a = await attach(d, id);
    a.type("echo mark-$((40+1))\n");
    await a.untilPrompt(/mark-41/);
    await a.close();
    const end = (await api(d, "GET", `/pty/${id}`)).json.output_offset;
    assert.ok(end > 0);

    const b = await attach(d, id, "?since=0");
    assert.equal(b.frames[0].kind, "bin", "replay comes before connected");
    assert.equal(b.frames[0].prefix, 0x03);
    assert.equal(b.frames[0].data.readBigUInt64BE(0), 0n);
    const replay = b.frames[0].data.subarray(8);
    assert.equal(replay.length, end);
    assert.match(replay.toString(), /mark-41/);
    await b.close();

    const c = await attach(d, id, `?since=${end - 5}`);
    assert.equal(c.frames[0].prefix, 0x03);
    assert.equal(c.frames[0].data.readBigUInt64BE(0), BigInt(end - 5));
    assert.deepEqual(c.frames[0].data.subarray(8), replay.subarray(end - 5));
    await c.close();

    const e = await attach(d, id, `?since=${end}`);
    assert.equal(e.frames[0].kind, "json", "nothing to replay");
    e.type("echo again-$((1+1))\n");
    await e.untilOutput(/again-2/);
    await e.close();

    // Bad since values count as 0, as upstream parses them.
    const f = await attach(d, id, "?since=abc");
    assert.equal(f.frames[0].data.readBigUInt64BE(0), 0n);
    await f.close();
    assert.equal((await api(d, "DELETE", `/pty/${id}`)).status, 200);
  });

  it("takeover closes the old writer with 4001", async () => {
    const d = execd.daemon;
    const id = await create(d);
    const a = await attach(d, id);
    const b = await attach(d, id, "?takeover=1");
    assert.deepEqual(await a.closeInfo(), { code: 4001,
      reason: "TAKEN_OVER" });
    b.type("echo still-$((3*3))\n");
    await b.untilOutput(/still-9/);
    await b.close();
    assert.equal((await api(d, "DELETE", `/pty/${id}`)).status, 200);
  });

  it("refuses a second writer with 409", async () => {
    const d = execd.daemon;
    const id = await create(d);
    const a = await attach(d, id);
    const b = connect(d, id);
    const err = await b.opened.then(() => null, (e) => e);
    assert.ok(err, "the second writer was let in");
    assert.equal(err.status, 409);
    assert.deepEqual(JSON.parse(err.body), { code: "ALREADY_CONNECTED",
      message: `another client is already connected to pty session ${id}` });
    a.type("echo first-$((5+5))\n");
    await a.untilOutput(/first-10/);
    await a.close();
    assert.equal((await api(d, "DELETE", `/pty/${id}`)).status, 200);
  });

  it("viewers get the same bytes and their input is ignored", async () => {
    const d = execd.daemon;
    const id = await create(d);
    const w = await attach(d, id);
    w.type("echo before-$((1+2))\n");
    await w.untilOutput(/before-3/);
    const v1 = await attach(d, id, "?viewer=1");
    const v2 = await attach(d, id, "?viewer=1&since=0");
    assert.equal(v1.json("connected")[0].viewer, true);
    assert.equal(v1.json("connected")[0].mode, "pty");
    // Viewer input of every kind goes nowhere.
    v1.type("echo VIEWER_$((4*4))\n");
    v1.send({ type: "stdin", data: "echo VIEWER_$((4*4))\n" });
    v1.send({ type: "signal", signal: "SIGKILL" });
    v1.send({ type: "resize", cols: 10, rows: 5 });
    v1.send({ type: "ping" });
    await v1.untilJson("pong");
    w.type("echo after-$((2*4)); stty size\n");
    await w.untilPrompt(/after-8\r\n24 80/);
    const end = (await api(d, "GET", `/pty/${id}`)).json.output_offset;
    for (const t of [w, v2]) {
      await t.until(() => t.allBytes().length === end, "all the bytes");
    }
    assert.deepEqual(v2.allBytes(), w.allBytes());
    await v1.untilOutput(/after-8/);
    assert.ok(w.output().endsWith(v1.output()), "v1 saw the same tail");
    assert.doesNotMatch(w.output(), /VIEWER_16/);
    for (const t of [v1, v2, w]) await t.close();
    assert.equal((await api(d, "DELETE", `/pty/${id}`)).status, 200);
  });

  it("pipe mode keeps stdout and stderr apart", async () => {
    const d = execd.daemon;
    const id = await create(d, {
      command: "echo to-out; echo to-err >&2; read x; echo got-$x",
    });
    const t = await attach(d, id, "?pty=0");
    assert.equal(t.json("connected")[0].mode, "pipe");
    await t.untilOutput(/to-out\n/, 0x01);
    await t.untilOutput(/to-err\n/, 0x02);
    t.send({ type: "resize", cols: 100, rows: 20 }); // a no-op
    t.type("line\n");
    await t.untilJson("exit");
    assert.equal(t.output(0x01), "to-out\ngot-line\n");
    assert.equal(t.output(0x02), "to-err\n");
    assert.equal(t.json("exit")[0].exit_code, 0);
    await t.closeInfo();
  });

  it("a viewer that came before the shell is told its real mode", async () => {
    const d = execd.daemon;
    const id = await create(d, { command: "echo piped; read x" });
    const v = connect(d, id, "?viewer=1");
    await v.opened;
    // No shell yet: the viewer waits for the writer to start one.
    const w = await attach(d, id, "?pty=0");
    await v.untilJson("connected");
    assert.deepEqual(v.json("connected")[0], { type: "connected",
      session_id: id, mode: "pipe", viewer: true });
    await v.untilOutput(/piped\n/, 0x01);
    w.type("\n");
    await v.untilJson("exit");
    for (const t of [v, w]) await t.closeInfo();
  });

  it("a viewer of a session deleted before its shell started gets exit",
    async () => {
      const d = execd.daemon;
      const id = await create(d);
      const v = connect(d, id, "?viewer=1");
      await v.opened;
      assert.equal((await api(d, "DELETE", `/pty/${id}`)).status, 200);
      await v.untilJson("exit");
      assert.equal(v.json("exit")[0].exit_code, -1);
      assert.equal((await v.closeInfo()).code, 1000);
    });

  it("delete kills the shell; the client gets exit -1", async () => {
    const d = execd.daemon;
    const id = await create(d);
    const t = await attach(d, id);
    t.type("echo up\n");
    await t.untilOutput(/up\r\n/);
    assert.equal((await api(d, "DELETE", `/pty/${id}`)).status, 200);
    await t.untilJson("exit");
    assert.deepEqual(t.json("exit")[0], { type: "exit", exit_code: -1 });
    assert.equal((await t.closeInfo()).code, 1000);
    assert.equal((await api(d, "GET", `/pty/${id}`)).status, 404);
  });

  it("a shell that exited is not restarted on reconnect", async () => {
    const d = execd.daemon;
    const id = await create(d, { command: "echo first-life; exit 5" });
    const a = connect(d, id);
    await a.untilJson("exit");
    await a.closeInfo();
    const end = (await api(d, "GET", `/pty/${id}`)).json.output_offset;

    const b = connect(d, id);
    await b.opened;
    await b.untilJson("exit");
    assert.equal(b.frames[0].prefix, 0x03);
    assert.match(b.allBytes().toString(), /first-life/);
    assert.deepEqual(b.frames.filter((f) => f.kind === "json")
      .map((f) => f.v.type), ["connected", "exit"]);
    assert.equal(b.json("exit")[0].exit_code, 5);
    assert.deepEqual(await b.closeInfo(), { code: 1000,
      reason: "process exited" });
    const g = await api(d, "GET", `/pty/${id}`);
    assert.deepEqual(g.json, { session_id: id, running: false,
      output_offset: end, exit_code: 5 });
    const started = d.log().split("\n").filter((l) =>
      l.includes(`pty=${id}`) && l.includes("shell started"));
    assert.equal(started.length, 1, "one shell, ever");
  });

  it("drops a client that does not read; the ring keeps recording",
    async () => {
      const d = execd.daemon;
      const n = 40_000_000;
      const id = await create(d, { command: "sleep 0.3; head -c " + n +
        " /dev/zero | tr '\\0' x; echo; echo all-done; sleep 60" });
      const a = await attach(d, id);
      a.ws._socket.pause(); // reads nothing from now on
      await d.waitLog(new RegExp(`pty=${id}: a client reads too slowly`),
        WAIT_MS);
      a.ws._socket.resume();
      const info = await a.closeInfo();
      assert.ok([4002, 1006].includes(info.code), `closed with ${info.code}`);
      // The ring recorded everything meanwhile.
      const deadline = Date.now() + WAIT_MS;
      while ((await api(d, "GET", `/pty/${id}`)).json.output_offset <= n) {
        assert.ok(Date.now() < deadline, "the output never ended");
        await new Promise((r) => setTimeout(r, 50));
      }
      // The writer's place is free again, and nothing was lost.
      const b = await attach(d, id, "?since=" + (n - 10));
      await b.until(() => /all-done/.test(b.allBytes().toString()),
        "the tail");
      assert.match(b.allBytes().toString(), /^x{10}\r\nall-done\r\n$/);
      assert.equal(b.frames[0].data.readBigUInt64BE(0), BigInt(n - 10));
      await b.close();
      assert.equal((await api(d, "DELETE", `/pty/${id}`)).status, 200);
    });

  it("unknown ids are 404 on every route", async () => {
    const d = execd.daemon;
    const id = "00000000-0000-0000-0000-000000000000";
    const msg = { code: "CONTEXT_NOT_FOUND",
      message: `pty session ${id} not found` };
    for (const m of ["GET", "DELETE"]) {
      const r = await api(d, m, `/pty/${id}`);
      assert.equal(r.status, 404);
      assert.deepEqual(r.json, msg);
    }
    const t = connect(d, id);
    const err = await t.opened.then(() => null, (e) => e);
    assert.equal(err.status, 404);
    assert.deepEqual(JSON.parse(err.body), msg);
  });

  it("a plain GET of the socket route is refused", async () => {
    const d = execd.daemon;
    const id = await create(d);
    const r = await api(d, "GET", `/pty/${id}/ws`);
    assert.equal(r.status, 400);
    assert.equal(r.json.code, "INVALID_REQUEST_BODY");
    assert.equal((await api(d, "DELETE", `/pty/${id}`)).status, 200);
  });
});

describe("pty at shutdown", () => {
  it("attached clients are closed with 1001, execd exits 0", async () => {
    const d = await startExecd();
    try {
      const id = await create(d);
      const t = await attach(d, id);
      const v = await attach(d, id, "?viewer=1");
      t.type("echo up\n");
      await t.untilOutput(/up\r\n/);
      const st = await d.stop();
      assert.deepEqual(st, { code: 0, signal: null });
      for (const c of [t, v]) {
        assert.deepEqual(await c.closeInfo(), { code: 1001,
          reason: "execd is shutting down" });
      }
    } finally {
      if (d.running) await d.stop({ signal: "SIGKILL" }).catch(() => {});
    }
  });
});

describe("pty with an access token", () => {
  const execd = useExecd({ token: TOKEN });

  it("the upgrade needs the token", async () => {
    const d = execd.daemon;
    const id = await create(d);
    const bare = new Term(`${wsBase(d)}/pty/${id}/ws`);
    const err = await bare.opened.then(() => null, (e) => e);
    assert.equal(err.status, 401);
    assert.deepEqual(JSON.parse(err.body), { error:
      "Unauthorized: invalid or missing header X-EXECD-ACCESS-TOKEN" });
    const t = await attach(d, id);
    t.type("echo ok-$((9+1))\n");
    await t.untilOutput(/ok-10/);
    await t.close();
    assert.equal((await api(d, "DELETE", `/pty/${id}`)).status, 200);
  });
});

describe("pty with a small replay buffer", () => {
  const execd = useExecd({ args: ["--pty-replay", "4K"] });

  it("keeps only the last --pty-replay bytes for a reconnect", async () => {
    const d = execd.daemon;
    const id = await create(d, { command: "head -c 10000 /dev/zero | " +
      "tr '\\0' x; echo; echo tail-end; exec sleep 30" });
    const a = connect(d, id);
    await a.opened;
    await a.untilOutput(/tail-end/);
    const end = (await api(d, "GET", `/pty/${id}`)).json.output_offset;
    assert.ok(end > 10000, String(end));
    await a.close();
    const b = await attach(d, id, "?since=0");
    assert.equal(b.frames[0].prefix, 0x03);
    // The oldest byte kept, not 0: the rest was dropped.
    assert.equal(b.frames[0].data.readBigUInt64BE(0), BigInt(end - 4096));
    assert.equal(b.frames[0].data.length - 8, 4096);
    assert.match(b.frames[0].data.subarray(8).toString(), /tail-end/);
    await b.close();
    assert.equal((await api(d, "DELETE", `/pty/${id}`)).status, 200);
  });
});
