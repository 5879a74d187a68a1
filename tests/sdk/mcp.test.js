// execd's /mcp driven by the official MCP TypeScript SDK
// (@modelcontextprotocol/sdk, pinned in package.json): a Client over
// StreamableHTTPClientTransport with the token as a Bearer header.
// initialize and tools/list, every tool called, progress notifications
// during a long run_command, a run_command and a run_code cancelled
// through an AbortSignal (notifications/cancelled), a PNG that a Python
// cell displays coming back as image content, log messages at the level
// set, a resource subscription heard on the server stream, and a long
// run_command whose stream the client loses mid-way and resumes with
// Last-Event-ID, missing nothing.  And the gateway: a stdio server of
// the policy file's reached as gw__tool, its progress heard.  Every wait
// is bounded by the test timeout.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from
  "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema, ResourceUpdatedNotificationSchema }
  from "@modelcontextprotocol/sdk/types.js";

import { useExecd } from "./lib/execd.js";

const TOKEN = "mcp-test-token-3c9a";
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9Q" +
  "DwADhgGAWjR9awAAAABJRU5ErkJggg==";
const TOOLS = ["click", "command_input", "command_output", "create_context",
  "delete", "delete_context", "edit_file", "grep", "interrupt", "key",
  "list_contexts", "list_directory", "move", "read_file", "run_code",
  "run_command", "screenshot", "scroll", "search_files", "type",
  "write_file"];

async function connect(d, token = TOKEN) {
  const client = new Client({ name: "execd-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(
    new URL(d.url + "/mcp"),
    { requestInit: { headers: { Authorization: "Bearer " + token } } });
  await client.connect(transport);
  return client;
}

function text(r) {
  return r.content.filter((c) => c.type === "text").map((c) => c.text)
    .join("");
}

async function call(client, name, args, opts) {
  return client.callTool({ name, arguments: args }, undefined, opts);
}

/**
 * A fetch that lets the first event stream a POST is answered with go
 * after its second notifications/progress, as a dropped connection
 * would; it notes each request's method and Last-Event-ID in log.
 */
function droppingFetch(log) {
  let armed = true;
  return async (url, init) => {
    const res = await fetch(url, init);
    log.push([init?.method ?? "GET",
      new Headers(init?.headers).get("last-event-id")]);
    const type = res.headers.get("content-type") ?? "";
    if (!armed || init?.method !== "POST" ||
        !type.startsWith("text/event-stream")) {
      return res;
    }
    armed = false;
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    const enc = new TextEncoder();
    let pending = "";
    let progress = 0;
    let drop = false;
    const body = new ReadableStream({
      async pull(ctrl) {
        if (drop) {
          // after the events queued so far have been read
          await reader.cancel();
          ctrl.error(new Error("connection dropped by the test"));
          return;
        }
        for (;;) {
          const i = pending.indexOf("\n\n");
          if (i >= 0) {
            const ev = pending.slice(0, i + 2);
            pending = pending.slice(i + 2);
            ctrl.enqueue(enc.encode(ev));
            drop = ev.includes("notifications/progress") && ++progress === 2;
            return;
          }
          const { value, done } = await reader.read();
          if (done) {
            ctrl.close();
            return;
          }
          pending += dec.decode(value, { stream: true });
        }
      },
    });
    return new Response(body, { status: res.status, headers: res.headers });
  };
}

/** Poll fn until it returns a truthy value, at most ms. */
async function until(fn, ms = 30000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("@modelcontextprotocol/sdk against execd", () => {
  const execd = useExecd({ token: TOKEN });
  let client;
  let dir;

  before(async () => {
    client = await connect(execd.daemon);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "execd-mcp-"));
  });
  after(async () => {
    await client?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("initializes and lists every tool with its schemas", async () => {
    assert.equal(client.getServerVersion().name, "execd");
    assert.ok(client.getServerCapabilities().tools);
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS);
    for (const t of tools) {
      assert.equal(t.inputSchema.type, "object", t.name);
      assert.ok(t.description.length > 20, t.name);
    }
    const rc = tools.find((t) => t.name === "run_command");
    assert.deepEqual(rc.inputSchema.required, ["command"]);
    assert.equal(rc.outputSchema.type, "object");
  });

  it("writes, reads, edits, lists, searches, greps, moves, deletes",
    async () => {
      const f = path.join(dir, "sub", "a.txt");
      let r = await call(client, "write_file",
        { path: f, content: "one\ntwo\nthree\nfour\n", mode: "600" });
      assert.ok(!r.isError, text(r));
      assert.equal(fs.readFileSync(f, "utf8"), "one\ntwo\nthree\nfour\n");
      assert.equal(fs.statSync(f).mode & 0o777, 0o600);

      r = await call(client, "read_file", { path: f });
      assert.equal(text(r), "one\ntwo\nthree\nfour\n");
      r = await call(client, "read_file", { path: f, offset: 4, length: 3 });
      assert.match(text(r), /^two\n\[execd: 3 of 19 bytes shown/);
      r = await call(client, "read_file",
        { path: f, start_line: 2, line_count: 2 });
      assert.equal(text(r), "two\nthree\n");

      r = await call(client, "edit_file",
        { path: f, old_string: "three", new_string: "THREE" });
      assert.ok(!r.isError, text(r));
      assert.equal(fs.readFileSync(f, "utf8"), "one\ntwo\nTHREE\nfour\n");
      assert.equal(fs.statSync(f).mode & 0o777, 0o600);
      r = await call(client, "edit_file",
        { path: f, old_string: "absent", new_string: "x" });
      assert.equal(r.isError, true);
      assert.match(text(r), /not found/);
      r = await call(client, "edit_file",
        { path: f, old_string: "o", new_string: "0" });
      assert.equal(r.isError, true);
      assert.match(text(r), /occurs 3 times/);
      assert.equal(fs.readFileSync(f, "utf8"), "one\ntwo\nTHREE\nfour\n");

      r = await call(client, "list_directory", { path: dir, depth: 2 });
      assert.deepEqual(r.structuredContent.entries.map((e) => e.path),
        [path.join(dir, "sub"), f]);
      r = await call(client, "search_files", { path: dir, pattern: "*.txt" });
      assert.deepEqual(r.structuredContent.files.map((e) => e.path), [f]);
      r = await call(client, "grep", { path: dir, pattern: "^T.REE$" });
      assert.deepEqual(r.structuredContent.matches,
        [{ path: f, line: 3, text: "THREE" }]);

      const g = path.join(dir, "b.txt");
      r = await call(client, "move", { source: f, destination: g });
      assert.ok(!r.isError, text(r));
      assert.ok(fs.existsSync(g) && !fs.existsSync(f));
      r = await call(client, "delete", { path: path.join(dir, "sub") });
      assert.equal(r.isError, true);
      assert.match(text(r), /recursive/);
      r = await call(client, "delete",
        { path: path.join(dir, "sub"), recursive: true });
      assert.ok(!r.isError && !fs.existsSync(path.join(dir, "sub")));
      r = await call(client, "read_file", { path: f });
      assert.equal(r.isError, true);
    });

  it("runs commands in the foreground and the background", async () => {
    let r = await call(client, "run_command", {
      command: "echo \"$GREETING\" from $(pwd); echo oops >&2; exit 3",
      cwd: dir, env: { GREETING: "hello" } });
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent.exit_code, 3);
    assert.equal(r.structuredContent.stdout, "hello from " + dir + "\n");
    assert.equal(r.structuredContent.stderr, "oops\n");

    r = await call(client, "run_command",
      { command: "echo first; sleep 0.5; echo second", background: true });
    const id = r.structuredContent.id;
    assert.match(id, /^[0-9a-f]{32}$/);
    const out = await until(async () => {
      const o = await call(client, "command_output", { id });
      return o.structuredContent.running ? null : o.structuredContent;
    });
    assert.equal(out.output, "first\nsecond\n");
    assert.equal(out.exit_code, 0);
    r = await call(client, "command_output",
      { id, offset: out.next_offset - 7 });
    assert.equal(r.structuredContent.output, "second\n");

    r = await call(client, "run_command", { command: "tr a-z A-Z",
      background: true, stdin: true });
    const up = r.structuredContent.id;
    r = await call(client, "command_input",
      { id: up, text: "shout\n", close: true });
    assert.ok(!r.isError, text(r));
    const upper = await until(async () => {
      const o = await call(client, "command_output", { id: up });
      return o.structuredContent.running ? null : o.structuredContent;
    });
    assert.equal(upper.output, "SHOUT\n");
    r = await call(client, "command_input", { id: up, text: "late" });
    assert.equal(r.isError, true);

    r = await call(client, "run_command",
      { command: "exec sleep 120", background: true });
    const bg = r.structuredContent.id;
    r = await call(client, "interrupt", { id: bg });
    assert.ok(!r.isError, text(r));
    await until(async () => {
      const o = await call(client, "command_output", { id: bg });
      return !o.structuredContent.running;
    });
  });

  it("streams progress notifications during a long run_command",
    async () => {
      const seen = [];
      // With a cwd, checked on a worker before the stream opens.
      const r = await call(client, "run_command", { cwd: dir,
        command: "for i in 1 2 3 4; do echo line$i; sleep 0.3; done" },
      { onprogress: (p) => seen.push(p) });
      assert.equal(r.structuredContent.exit_code, 0);
      assert.equal(r.structuredContent.stdout,
        "line1\nline2\nline3\nline4\n");
      assert.ok(seen.length >= 1, "no progress notification");
      assert.match(seen.map((p) => p.message).join(""), /line1/);
      for (let i = 1; i < seen.length; i++) {
        assert.ok(seen[i].progress > seen[i - 1].progress);
      }
    });

  it("resumes a dropped stream with Last-Event-ID, missing nothing",
    async () => {
      const log = [];
      const c2 = new Client({ name: "execd-resume", version: "1.0.0" });
      const logs = [];
      c2.setNotificationHandler(LoggingMessageNotificationSchema,
        (n) => { logs.push(n.params); });
      await c2.connect(new StreamableHTTPClientTransport(
        new URL(execd.daemon.url + "/mcp"), {
          requestInit: { headers: { Authorization: "Bearer " + TOKEN } },
          fetch: droppingFetch(log),
          reconnectionOptions: { initialReconnectionDelay: 100,
            maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1.5,
            maxRetries: 3 } }));
      try {
        await c2.setLoggingLevel("info");
        const seen = [];
        const lines = [1, 2, 3, 4, 5, 6, 7, 8].map((i) => `line${i}\n`)
          .join("");
        const r = await call(c2, "run_command", { command:
          "for i in 1 2 3 4 5 6 7 8; do echo line$i; sleep 0.3; done" },
        { onprogress: (p) => seen.push(p) });
        assert.equal(r.structuredContent.exit_code, 0);
        assert.equal(r.structuredContent.stdout, lines);
        // Two before the drop, the rest replayed or live after it.
        assert.equal(seen.map((p) => p.message).join(""), lines);
        assert.ok(log.some(([m, id]) => m === "GET" && /^\d+-\d+$/.test(id)),
          JSON.stringify(log));
        assert.ok(logs.some((l) => l.level === "info" &&
          /command [0-9a-f]{32} started/.test(l.data)), JSON.stringify(logs));
      } finally {
        await c2.close();
      }
    });

  it("cancels a run_command through notifications/cancelled", async () => {
    const ac = new AbortController();
    const pending = call(client, "run_command",
      { command: "echo started; exec sleep 121" },
      { signal: ac.signal, onprogress: () => ac.abort("enough") });
    await assert.rejects(pending);
    await until(async () => {
      const r = await call(client, "run_command",
        { command: "ps -eo args | grep -c '^sleep 121$' || true" });
      return r.structuredContent.stdout === "0\n";
    });
  });

  it("runs Python with state, an image, and an interrupt", async () => {
    let r = await call(client, "create_context", { language: "python" });
    const ctx = r.structuredContent.id;
    try {
      r = await call(client, "list_contexts", {});
      assert.ok(r.structuredContent.contexts.some((c) => c.id === ctx));

      r = await call(client, "run_code",
        { context_id: ctx, code: "x = 20\nprint('hi')\nx + 22" });
      assert.ok(!r.isError, text(r));
      assert.match(text(r), /hi\n/);
      assert.match(text(r), /42/);

      r = await call(client, "run_code", { context_id: ctx, code:
        "import base64\nfrom IPython.display import Image, display\n" +
        `display(Image(data=base64.b64decode('${PNG}')))` });
      const img = r.content.find((c) => c.type === "image");
      assert.ok(img, JSON.stringify(r));
      assert.equal(img.mimeType, "image/png");
      assert.equal(img.data, PNG);

      r = await call(client, "run_code", { context_id: ctx, code: "1/0" });
      assert.equal(r.isError, true);
      assert.match(text(r), /ZeroDivisionError/);

      // Cancelled mid-sleep: the kernel is interrupted, state is kept.
      const ac = new AbortController();
      const pending = call(client, "run_code", { context_id: ctx, code:
        "import time\nprint('sleeping', flush=True)\ntime.sleep(300)" },
      { signal: ac.signal, onprogress: () => ac.abort("enough") });
      await assert.rejects(pending);
      r = await call(client, "run_code", { context_id: ctx, code: "x" });
      assert.match(text(r), /20/);

      // The interrupt tool on the context, while a call waits on it.
      const started = [];
      const sleeping = call(client, "run_code", { context_id: ctx, code:
        "import time\nprint('zz', flush=True)\ntime.sleep(300)" },
      { onprogress: (p) => started.push(p) });
      await until(async () => started.length > 0);
      r = await call(client, "interrupt", { id: ctx });
      assert.ok(!r.isError, text(r));
      r = await sleeping;
      assert.equal(r.isError, true);
      assert.match(text(r), /KeyboardInterrupt/);
    } finally {
      r = await call(client, "delete_context", { id: ctx });
      assert.ok(!r.isError, text(r));
    }
    r = await call(client, "list_contexts", {});
    assert.ok(!r.structuredContent.contexts.some((c) => c.id === ctx));
  });

  it("reads files as resources through the file:/// template", async () => {
    assert.ok(client.getServerCapabilities().resources);
    const { resourceTemplates } = await client.listResourceTemplates();
    assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate),
      ["file:///{path}"]);
    assert.deepEqual((await client.listResources()).resources, []);

    const md = path.join(dir, "notes é.md");
    fs.writeFileSync(md, "# Notes\n");
    let r = await client.readResource(
      { uri: "file://" + encodeURI(md) });
    assert.deepEqual(r.contents, [{ uri: "file://" + encodeURI(md),
      mimeType: "text/markdown", text: "# Notes\n" }]);

    const png = path.join(dir, "dot.png");
    fs.writeFileSync(png, Buffer.from(PNG, "base64"));
    r = await client.readResource({ uri: "file://" + png });
    assert.equal(r.contents[0].mimeType, "image/png");
    assert.equal(r.contents[0].blob, PNG);

    const bin = path.join(dir, "data");
    fs.writeFileSync(bin, Buffer.from([0, 1, 2, 255]));
    r = await client.readResource({ uri: "file://" + bin });
    assert.equal(r.contents[0].mimeType, "application/octet-stream");
    assert.equal(r.contents[0].blob, "AAEC/w==");

    await assert.rejects(
      client.readResource({ uri: "file://" + path.join(dir, "none") }),
      (e) => e.code === -32002);

    // Subscribed: a change comes as notifications/resources/updated on
    // the server stream the transport opened with GET after initialize.
    assert.equal(client.getServerCapabilities().resources.subscribe, true);
    const updated = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema,
      (n) => { updated.push(n.params.uri); });
    const uri = "file://" + encodeURI(md);
    await client.subscribeResource({ uri });
    let k = 0;
    await until(async () => {
      // the server stream may open after the subscription: write again
      fs.appendFileSync(md, `change ${++k}\n`);
      await new Promise((res) => setTimeout(res, 100));
      return updated.length > 0;
    });
    assert.ok(updated.every((u) => u === uri), JSON.stringify(updated));
    await client.unsubscribeResource({ uri });
  });

  it("refuses a client without the token", async () => {
    await assert.rejects(connect(execd.daemon, "wrong-token"));
  });
});

// The gateway: a stdio MCP server written with the same SDK
// (lib/stdio-server.mjs), named in a policy file, reached through execd
// by the official Client as gw__tool, its progress heard.
describe("@modelcontextprotocol/sdk through execd's gateway", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "execd-mcp-gw-"));
  const policy = path.join(dir, "policy.yaml");
  const server = path.join(path.dirname(new URL(import.meta.url).pathname),
    "lib", "stdio-server.mjs");
  fs.writeFileSync(policy, "mcp_servers:\n  gw:\n    command: [" +
    JSON.stringify(process.execPath) + ", " + JSON.stringify(server) +
    "]\n");
  const execd = useExecd({ token: TOKEN, args: ["--config", policy] });

  it("lists, calls and hears the progress of a relayed tool", async () => {
    const client = await connect(execd.daemon);
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const n of ["gw__echo", "gw__slow", "list_mcp_servers", "run_code"])
      assert.ok(names.includes(n), names.join(" "));
    const r = await call(client, "gw__echo", { text: "through execd" });
    assert.equal(text(r), "echo: through execd");
    const seen = [];
    const slow = await call(client, "gw__slow", { steps: 3, ms: 20 }, {
      onprogress: (p) => seen.push([p.progress, p.total, p.message]) });
    assert.equal(text(slow), "done after 3 steps");
    assert.deepEqual(seen, [[1, 3, "step 1"], [2, 3, "step 2"],
      [3, 3, "step 3"]]);
    const ls = await call(client, "list_mcp_servers", {});
    assert.equal(ls.structuredContent.servers[0].state, "running");
    await client.close();
  });
});
