// Code contexts and runs (/code/context, /code/contexts, /code) through the
// SDK's own client, stream parser and event dispatcher (see lib/codes.js).
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { codesFor } from "./lib/codes.js";
import { useExecd } from "./lib/execd.js";
import { expectApiError } from "./lib/sandbox.js";

const T = () => AbortSignal.timeout(60_000);
const out = (ex) => ex.logs.stdout.map((m) => m.text).join("");

describe("code interpreting", () => {
  const execd = useExecd();

  it("creates, lists, gets and deletes contexts", async () => {
    const codes = codesFor(await execd.connect());
    const ctx = await codes.createContext("python");
    assert.equal(ctx.language, "python");
    assert.match(ctx.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const all = await codes.listContexts();
    assert.ok(all.some((c) => c.id === ctx.id), JSON.stringify(all));
    assert.deepEqual(await codes.listContexts("python"), [ctx]);
    assert.deepEqual(await codes.getContext(ctx.id), ctx);
    await codes.deleteContext(ctx.id);
    await expectApiError(codes.getContext(ctx.id),
      { status: 404, code: "CONTEXT_NOT_FOUND" });
  });

  it("keeps state across runs and reports results and errors", async () => {
    const codes = codesFor(await execd.connect());
    const ctx = await codes.createContext("python");
    const a = await codes.run("x = 41\nprint('hi')", { context: ctx, signal: T() });
    assert.equal(a.id, ctx.id);
    assert.equal(out(a), "hi\n");
    assert.ok(a.complete, "execution_complete");
    const b = await codes.run("x + 1", { context: ctx, signal: T() });
    assert.equal(b.result[0].text, "42");
    assert.equal(b.executionCount, 2);
    const c = await codes.run("1/0", { context: ctx, signal: T() });
    assert.equal(c.error.name, "ZeroDivisionError");
    assert.equal(c.error.value, "division by zero");
    assert.ok(c.error.traceback.length > 0);
  });

  it("runs language-only code in the default context", async () => {
    const codes = codesFor(await execd.connect());
    const a = await codes.run("y = 'kept'", { language: "python", signal: T() });
    const b = await codes.run("print(y)", { language: "python", signal: T() });
    assert.equal(b.id, a.id);
    assert.equal(out(b), "kept\n");
    const listed = await codes.listContexts("python");
    assert.ok(listed.some((c) => c.id === a.id));
  });

  it("interrupts a long run", async () => {
    const codes = codesFor(await execd.connect());
    const ctx = await codes.createContext("python");
    const running = codes.run("import time; time.sleep(100)",
      { context: ctx, signal: T() });
    await new Promise((r) => setTimeout(r, 1000));
    await codes.interrupt(ctx.id);
    const ex = await running;
    assert.equal(ex.error.name, "KeyboardInterrupt");
  });

  it("rejects unknown contexts and languages before streaming", async () => {
    const codes = codesFor(await execd.connect());
    await expectApiError(codes.run("1", { context: { id: "nope", language: "python" } }),
      { status: 404, code: "CONTEXT_NOT_FOUND" });
    await expectApiError(codes.createContext("cobol"),
      { status: 400, code: "INVALID_REQUEST_BODY" });
    await expectApiError(codes.interrupt("nope"), { status: 404 });
  });
});
