// Shell commands through the SDK's commands service: run (foreground and
// background), getCommandStatus, getBackgroundCommandLogs, interrupt.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { useExecd } from "./lib/execd.js";
import { expectApiError } from "./lib/sandbox.js";

const T = () => AbortSignal.timeout(30_000);
const texts = (msgs) => msgs.map((m) => m.text);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const ID_RE = /^[0-9a-f]{32}$/;

/** Poll fn() until it returns a truthy value; fail after timeoutMs. */
async function waitFor(fn, timeoutMs = 10_000, what = "condition") {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** The status once the command has finished. */
async function finished(commands, id, timeoutMs = 10_000) {
  return waitFor(async () => {
    const s = await commands.getCommandStatus(id);
    return s.running ? null : s;
  }, timeoutMs, `command ${id} to finish`);
}

describe("commands", () => {
  const execd = useExecd({ args: ["--grace-period", "500"] });

  it("runs a foreground command, one log entry per line", async () => {
    const sbx = await execd.connect();
    const seen = [];
    const ex = await sbx.commands.run(
      "echo hello; echo oops >&2; printf 'a\\n\\nb'",
      undefined,
      { onStdout: (m) => seen.push(m.text) },
      T(),
    );
    assert.match(ex.id, ID_RE);
    assert.deepEqual(texts(ex.logs.stdout), ["hello", "a", "\n", "b"]);
    assert.deepEqual(texts(ex.logs.stderr), ["oops"]);
    assert.deepEqual(seen, ["hello", "a", "\n", "b"]);
    assert.ok(ex.complete, "execution_complete");
    assert.equal(ex.error, undefined);
    assert.equal(ex.exitCode, 0);
  });

  it("reports the exit code of a failing command", async () => {
    const sbx = await execd.connect();
    const ex = await sbx.commands.run("echo before; exit 3", undefined, undefined, T());
    assert.deepEqual(texts(ex.logs.stdout), ["before"]);
    assert.equal(ex.exitCode, 3);
    assert.equal(ex.error.name, "CommandExecError");
    assert.equal(ex.error.value, "3");
    assert.deepEqual(ex.error.traceback, ["exit status 3"]);
    assert.equal(ex.complete, undefined);
    const st = await sbx.commands.getCommandStatus(ex.id);
    assert.equal(st.id, ex.id);
    assert.equal(st.running, false);
    assert.equal(st.exitCode, 3);
    assert.equal(st.error, "exit status 3");
    assert.ok(st.startedAt instanceof Date && st.finishedAt instanceof Date);
    assert.ok(st.finishedAt >= st.startedAt);
  });

  it("passes envs and the working directory", async () => {
    const sbx = await execd.connect();
    const ex = await sbx.commands.run("echo $FOO; pwd -P",
      { envs: { FOO: "bar baz" }, workingDirectory: "/" }, undefined, T());
    assert.deepEqual(texts(ex.logs.stdout), ["bar baz", "/"]);
    assert.equal(ex.exitCode, 0);
  });

  it("ends a command at its timeout", async () => {
    const sbx = await execd.connect();
    const t0 = Date.now();
    const ex = await sbx.commands.run("sleep 30", { timeoutSeconds: 0.3 }, undefined, T());
    assert.ok(Date.now() - t0 < 10_000, `took ${Date.now() - t0} ms`);
    assert.equal(ex.exitCode, -1);
    assert.equal(ex.error.value, "-1");
    assert.match(ex.error.traceback.join(" "), /timeout/i);
  });

  it("runs in the background, with status and logs by cursor", async () => {
    const sbx = await execd.connect();
    // The run answers long before the command ends (the checks below
    // need it still running, so the sleep leaves a loaded machine room).
    const cmd = "echo first; sleep 4; echo second";
    const t0 = Date.now();
    const ex = await sbx.commands.run(cmd, { background: true }, undefined, T());
    assert.ok(Date.now() - t0 < 3000, `background run took ${Date.now() - t0} ms`);
    assert.match(ex.id, ID_RE);
    assert.equal(ex.exitCode, undefined);
    assert.deepEqual(ex.logs.stdout, []);

    const st = await sbx.commands.getCommandStatus(ex.id);
    assert.equal(st.running, true);
    assert.equal(st.content, cmd);
    assert.equal(st.exitCode, null);
    assert.equal(st.finishedAt, null);
    assert.ok(st.startedAt instanceof Date && !Number.isNaN(st.startedAt.getTime()));

    const first = await waitFor(async () => {
      const l = await sbx.commands.getBackgroundCommandLogs(ex.id);
      return l.content.length > 0 ? l : null;
    }, 5000, "first output");
    assert.equal(first.content, "first\n");
    assert.equal(first.cursor, 6);

    const done = await finished(sbx.commands, ex.id);
    assert.equal(done.exitCode, 0);
    assert.ok(done.finishedAt instanceof Date);
    const rest = await sbx.commands.getBackgroundCommandLogs(ex.id, first.cursor);
    assert.deepEqual(rest, { content: "second\n", cursor: 13 });
    const none = await sbx.commands.getBackgroundCommandLogs(ex.id, rest.cursor);
    assert.deepEqual(none, { content: "", cursor: 13 });
    const all = await sbx.commands.getBackgroundCommandLogs(ex.id, 0);
    assert.deepEqual(all, { content: "first\nsecond\n", cursor: 13 });
  });

  it("interrupts a running background command", async () => {
    const sbx = await execd.connect();
    const ex = await sbx.commands.run("sleep 30", { background: true }, undefined, T());
    assert.equal((await sbx.commands.getCommandStatus(ex.id)).running, true);
    await sbx.commands.interrupt(ex.id);
    const st = await finished(sbx.commands, ex.id, 5000);
    assert.equal(st.running, false);
    assert.equal(st.exitCode, -1);
    await expectApiError(sbx.commands.interrupt(ex.id), { status: 409 });
  });

  it("interrupts a running foreground command", async () => {
    const sbx = await execd.connect();
    let id;
    const running = sbx.commands.run("echo ready; sleep 30", undefined, {
      onInit: (i) => { id = i.id; },
    }, T());
    await waitFor(async () => {
      if (!id) return false;
      return (await sbx.commands.getCommandStatus(id)).running;
    }, 5000, "the command to start");
    await sleep(200);
    await sbx.commands.interrupt(id);
    const ex = await running;
    assert.equal(ex.id, id);
    assert.deepEqual(texts(ex.logs.stdout), ["ready"]);
    assert.equal(ex.exitCode, -1);
    assert.equal(ex.complete, undefined);
  });

  it("runs as another user", async (t) => {
    if (process.getuid() !== 0) {
      t.skip("needs root");
      return;
    }
    const sbx = await execd.connect();
    const ex = await sbx.commands.run("id -u; id -g",
      { uid: 65534, gid: 65534, workingDirectory: "/" }, undefined, T());
    assert.deepEqual(texts(ex.logs.stdout), ["65534", "65534"]);
  });

  it("rejects bad requests and unknown ids", async () => {
    const sbx = await execd.connect();
    await expectApiError(
      sbx.commands.run("true", { workingDirectory: "/no/such/dir" }, undefined, T()),
      { status: 400, code: "INVALID_REQUEST_BODY" });
    await expectApiError(
      sbx.commands.run("true", { uid: 4000000 }, undefined, T()),
      { status: 400, code: "INVALID_REQUEST_BODY" });
    await expectApiError(sbx.commands.getCommandStatus("0".repeat(32)),
      { status: 404, code: "INVALID_REQUEST_BODY" });
    await expectApiError(sbx.commands.getBackgroundCommandLogs("0".repeat(32)),
      { status: 404 });
    await expectApiError(sbx.commands.interrupt("0".repeat(32)), { status: 404 });
    const fg = await sbx.commands.run("true", undefined, undefined, T());
    await expectApiError(sbx.commands.getBackgroundCommandLogs(fg.id), { status: 400 });
  });
});
