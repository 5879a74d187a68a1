// Bash sessions through the SDK's commands service: createSession,
// runInSession, deleteSession.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";

import { useExecd } from "./lib/execd.js";
import { expectApiError } from "./lib/sandbox.js";

const T = () => AbortSignal.timeout(30_000);
const texts = (msgs) => msgs.map((m) => m.text);
const ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const RESET_RE = /restarted with fresh state/;

describe("bash sessions", () => {
  const execd = useExecd({ args: ["--grace-period", "500"] });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "execd-sdk-session-"));
  after(() => fs.rmSync(tmp, { recursive: true, force: true }));

  /** runInSession with a bound on the whole stream. */
  const run = (sbx, id, cmd, opts, handlers) =>
    sbx.commands.runInSession(id, cmd, opts, handlers, T());

  it("creates a session without a working directory", async () => {
    const sbx = await execd.connect();
    const id = await sbx.commands.createSession();
    assert.match(id, ID_RE);
    const other = await sbx.commands.createSession();
    assert.notEqual(other, id);
    const ex = await run(sbx, id, "echo hi");
    assert.equal(ex.id, id, "init carries the session id");
    assert.deepEqual(texts(ex.logs.stdout), ["hi"]);
    assert.ok(ex.complete);
    assert.equal(ex.exitCode, 0);
    await sbx.commands.deleteSession(other);
    await sbx.commands.deleteSession(id);
  });

  it("creates a session in a working directory, made if missing", async () => {
    const sbx = await execd.connect();
    const dir = path.join(tmp, "made", "by", "create");
    assert.equal(fs.existsSync(dir), false);
    const id = await sbx.commands.createSession({ workingDirectory: dir });
    assert.match(id, ID_RE);
    assert.ok(fs.statSync(dir).isDirectory(), "the directory was created");
    const ex = await run(sbx, id, "pwd -P; touch here");
    assert.deepEqual(texts(ex.logs.stdout), [fs.realpathSync(dir)]);
    assert.ok(fs.existsSync(path.join(dir, "here")));
    await sbx.commands.deleteSession(id);
  });

  it("rejects a relative working directory", async () => {
    const sbx = await execd.connect();
    await expectApiError(
      sbx.commands.createSession({ workingDirectory: "relative/dir" }),
      { status: 400 });
  });

  it("keeps variables, functions and the directory across runs", async () => {
    const sbx = await execd.connect();
    const id = await sbx.commands.createSession();
    let ex = await run(sbx, id,
      "V='two words'; export E=exported; f() { echo \"f:$1\"; }; cd /");
    assert.equal(ex.exitCode, 0);
    assert.deepEqual(ex.logs.stdout, []);
    ex = await run(sbx, id, "echo \"$V\"; echo $E; f x; pwd");
    assert.deepEqual(texts(ex.logs.stdout), ["two words", "exported", "f:x", "/"]);
    // A run's working directory sticks like a cd.
    ex = await run(sbx, id, "pwd -P", { workingDirectory: tmp });
    assert.deepEqual(texts(ex.logs.stdout), [fs.realpathSync(tmp)]);
    ex = await run(sbx, id, "pwd -P; echo \"$V\"");
    assert.deepEqual(texts(ex.logs.stdout), [fs.realpathSync(tmp), "two words"]);
    await sbx.commands.deleteSession(id);
  });

  it("streams stdout and stderr apart, through the handlers", async () => {
    const sbx = await execd.connect();
    const id = await sbx.commands.createSession();
    const seen = { init: null, out: [], err: [] };
    const ex = await run(sbx, id, "echo one; echo two >&2; printf 'a\\n\\nb'",
      undefined, {
        onInit: (i) => { seen.init = i.id; },
        onStdout: (m) => seen.out.push(m.text),
        onStderr: (m) => seen.err.push(m.text),
      });
    assert.equal(seen.init, id);
    assert.deepEqual(seen.out, ["one", "a", "\n", "b"]);
    assert.deepEqual(seen.err, ["two"]);
    assert.deepEqual(texts(ex.logs.stdout), ["one", "a", "\n", "b"]);
    assert.deepEqual(texts(ex.logs.stderr), ["two"]);
    await sbx.commands.deleteSession(id);
  });

  it("reports the exit code of a failing run and stays usable", async () => {
    const sbx = await execd.connect();
    const id = await sbx.commands.createSession();
    let ex = await run(sbx, id, "S=kept; echo before; (exit 3)");
    assert.deepEqual(texts(ex.logs.stdout), ["before"]);
    assert.equal(ex.exitCode, 3);
    assert.equal(ex.complete, undefined);
    assert.equal(ex.error.name, "CommandExecError");
    assert.equal(ex.error.value, "3");
    assert.deepEqual(ex.error.traceback, ["exit status 3"]);
    ex = await run(sbx, id, "echo $S");
    assert.deepEqual(texts(ex.logs.stdout), ["kept"]);
    // exit ends the shell: the session gets a fresh one and says so.
    ex = await run(sbx, id, "exit 4");
    assert.equal(ex.exitCode, 4);
    assert.equal(ex.error.traceback[0], "exit status 4");
    assert.match(ex.error.traceback[1], RESET_RE);
    ex = await run(sbx, id, "echo s=$S");
    assert.deepEqual(texts(ex.logs.stdout), ["s="]);
    assert.equal(ex.exitCode, 0);
    await sbx.commands.deleteSession(id);
  });

  it("ends a run at its timeout and keeps the session", async () => {
    const sbx = await execd.connect();
    const id = await sbx.commands.createSession();
    await run(sbx, id, "KEEP=yes");
    const t0 = Date.now();
    let ex = await run(sbx, id, "sleep 30", { timeoutSeconds: 0.3 });
    assert.ok(Date.now() - t0 < 10_000, `took ${Date.now() - t0} ms`);
    assert.equal(ex.complete, undefined);
    assert.equal(ex.error.name, "CommandExecError");
    assert.notEqual(ex.exitCode, 0);
    assert.match(ex.error.traceback.join(" "), /timeout/i);
    ex = await run(sbx, id, "echo $KEEP");
    assert.deepEqual(texts(ex.logs.stdout), ["yes"]);
    await sbx.commands.deleteSession(id);
  });

  it("queues runs on one session in order", async () => {
    const sbx = await execd.connect();
    const id = await sbx.commands.createSession();
    const first = run(sbx, id, "sleep 0.6; Q=first");
    await new Promise((r) => setTimeout(r, 100));
    const second = run(sbx, id, "echo \"q=$Q\"");
    const [a, b] = await Promise.all([first, second]);
    assert.equal(a.exitCode, 0);
    assert.deepEqual(texts(b.logs.stdout), ["q=first"]);
    await sbx.commands.deleteSession(id);
  });

  it("deletes a session: later calls are 404", async () => {
    const sbx = await execd.connect();
    const id = await sbx.commands.createSession();
    const ex = await run(sbx, id, "sleep 300 & echo $!");
    const pid = Number(texts(ex.logs.stdout)[0]);
    assert.ok(pid > 0, `pid ${pid}`);
    await sbx.commands.deleteSession(id);
    // The shell's process group went with it.
    const deadline = Date.now() + 5000;
    const alive = () => {
      try {
        const st = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
        return st.slice(st.lastIndexOf(")") + 2).split(" ")[0] !== "Z";
      } catch {
        return false;
      }
    };
    while (alive() && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    try {
      assert.equal(alive(), false, `pid ${pid} survived the delete`);
    } finally {
      try { process.kill(pid, "SIGKILL"); } catch { /* gone */ }
    }
    await expectApiError(run(sbx, id, "echo hi"),
      { status: 404, code: "CONTEXT_NOT_FOUND" });
    await expectApiError(sbx.commands.deleteSession(id),
      { status: 404, code: "CONTEXT_NOT_FOUND" });
    await expectApiError(run(sbx, "0".repeat(32), "true"), { status: 404 });
  });
});
