// Isolated sessions through the SDK's isolation service: capabilities,
// create (the SDK's `workspace` shape), run in the foreground, files on the
// session's merged view (session.files), get, list and delete.  The SDK has
// no background run yet: that one, its status and its log by cursor go
// over plain HTTP to the same daemon.  As root: execd makes the namespaces
// itself; skipped only where this host cannot (capabilities says why).
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import { useExecd } from "./lib/execd.js";
import { expectApiError } from "./lib/sandbox.js";

const T = () => AbortSignal.timeout(30_000);
const texts = (msgs) => msgs.map((m) => m.text);

describe("isolated sessions", () => {
  // Not under /tmp: the strict profile gives the session a /tmp of its own.
  const base = fs.mkdtempSync("/var/tmp/execd-sdk-iso-");
  const ws = path.join(base, "ws");
  const execd = useExecd({
    args: ["--isolation-upper-root", path.join(base, "upper")],
  });
  let sbx;
  let why = null;

  before(async () => {
    fs.mkdirSync(ws, { mode: 0o777 });
    fs.writeFileSync(path.join(ws, "kept.txt"), "original\n");
    sbx = await execd.connect();
    const caps = await sbx.isolation.capabilities();
    assert.equal(typeof caps.available, "boolean");
    assert.equal(typeof caps.diff_supported, "boolean");
    assert.equal(typeof caps.commit_supported, "boolean");
    if (process.getuid() !== 0) why = "needs root";
    else if (!caps.available) why = `host cannot: ${caps.message}`;
  });
  after(() => fs.rmSync(base, { recursive: true, force: true }));

  /** Plain HTTP to the daemon, for what the SDK does not call. */
  async function http(method, p, body) {
    const d = execd.daemon;
    const headers = { "content-type": "application/json" };
    if (d.token) headers["X-EXECD-ACCESS-TOKEN"] = d.token;
    const res = await fetch(d.url + p, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: T(),
    });
    return { status: res.status, headers: res.headers, text: await res.text() };
  }

  it("creates an overlay session and runs in it, the workspace untouched", async (t) => {
    if (why) return t.skip(why);
    const s = await sbx.isolation.create({ workspace: { path: ws, mode: "overlay" } });
    assert.match(s.sessionId, /^[0-9a-f-]{36}$/);
    const ex = await s.run("cat kept.txt; echo changed > kept.txt; cat kept.txt; pwd",
      undefined, undefined, T());
    assert.deepEqual(texts(ex.logs.stdout), ["original", "changed", ws]);
    assert.equal(ex.error, undefined);
    assert.equal(fs.readFileSync(path.join(ws, "kept.txt"), "utf8"), "original\n");
    const bad = await s.run("(exit 3)", undefined, undefined, T());
    assert.equal(bad.error?.name, "ExitError");
    assert.equal(bad.error?.value, "3");
    const st = await s.get();
    assert.equal(st.status, "active");
    const listed = await sbx.isolation.list();
    assert.ok(listed.some((x) => x.session_id === s.sessionId), JSON.stringify(listed));
    await s.delete();
    // The SDK's isolation adapter throws a plain Error with the status.
    await assert.rejects(s.get(), /404 .*SESSION_NOT_FOUND/);
  });

  it("works on the session's files through session.files", async (t) => {
    if (why) return t.skip(why);
    const s = await sbx.isolation.create({ workspace: { path: ws } });
    const f = s.files;
    const P = (n) => path.join(ws, n);
    await f.writeFiles([{ path: P("dir/a.txt"), data: "alpha\nbeta\n", mode: 644 }]);
    // In the session's view, not outside it.
    assert.equal(fs.existsSync(P("dir")), false);
    const ex = await s.run("cat dir/a.txt", undefined, undefined, T());
    assert.deepEqual(texts(ex.logs.stdout), ["alpha", "beta"]);
    assert.equal(await f.readFile(P("dir/a.txt")), "alpha\nbeta\n");
    assert.equal(await f.readFile(P("dir/a.txt"), { range: "bytes=0-4" }), "alpha");
    const info = await f.getFileInfo([P("dir/a.txt")]);
    assert.equal(info[P("dir/a.txt")].size, 11);
    const found = await f.search({ path: ws, pattern: "*.txt" });
    assert.deepEqual(found.map((e) => e.path).sort(), [P("dir/a.txt"), P("kept.txt")]);
    const listing = await f.listDirectory({ path: ws });
    assert.deepEqual(listing.map((e) => e.path).sort(), [P("dir"), P("kept.txt")]);
    await f.replaceContents([{ path: P("dir/a.txt"), oldContent: "beta", newContent: "gamma" }]);
    await f.moveFiles([{ src: P("dir/a.txt"), dest: P("b.txt") }]);
    await f.setPermissions([{ path: P("b.txt"), mode: 600 }]);
    await f.createDirectories([{ path: P("made/here"), mode: 755 }]);
    await f.deleteFiles([P("kept.txt")]);
    await f.deleteDirectories([P("dir")]);
    const after = await s.run("stat -c '%a %n' b.txt; cat b.txt; ls -A", undefined, undefined, T());
    assert.deepEqual(texts(after.logs.stdout), ["600 b.txt", "alpha", "gamma", "b.txt", "made"]);
    // Outside, nothing changed.
    assert.deepEqual(fs.readdirSync(ws), ["kept.txt"]);
    await expectApiError(f.readFile(P("kept.txt")), { status: 404 });
    await s.delete();
  });

  it("refuses writes on a read-only workspace", async (t) => {
    if (why) return t.skip(why);
    const s = await sbx.isolation.create({ workspace: { path: ws, mode: "ro" } });
    await expectApiError(s.files.writeFiles([{ path: path.join(ws, "x"), data: "x" }]),
      { status: 403 });
    assert.equal(await s.files.readFile(path.join(ws, "kept.txt")), "original\n");
    assert.equal(fs.existsSync(path.join(ws, "x")), false);
    await s.delete();
  });

  it("runs in the background with logs read by cursor", async (t) => {
    if (why) return t.skip(why);
    const s = await sbx.isolation.create({ workspace: { path: ws } });
    const base = `/v1/isolated/session/${s.sessionId}`;
    const r = await http("POST", `${base}/run`, { code: "echo one; echo two", background: true });
    assert.equal(r.status, 202, r.text);
    const runId = JSON.parse(r.text).run_id;
    let st;
    for (let i = 0; i < 200; i++) {
      st = JSON.parse((await http("GET", `${base}/runs/${runId}`)).text);
      if (st.running === false) break;
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.equal(st.exit_code, 0, JSON.stringify(st));
    const logs = await http("GET", `${base}/runs/${runId}/logs?cursor=0`);
    assert.equal(logs.status, 200);
    assert.equal(logs.text, "one\ntwo\n");
    const next = logs.headers.get("execd-isolated-tail-cursor");
    assert.equal(next, "8");
    const tail = await http("GET", `${base}/runs/${runId}/logs?cursor=4`);
    assert.equal(tail.text, "two\n");
    await s.delete();
    assert.equal((await http("GET", `${base}/runs/${runId}`)).status, 404);
  });
});
