// A smoke test of a deployed execd through the official SDK, for
// tests/docker.sh: ping (the SDK's readiness check), a command, a file
// written and read back, and, with SMOKE_CODE set, a run in each of
// Python, JavaScript, TypeScript, R, Octave and bash.
//   EXECD_URL=host:port [EXECD_TOKEN=...] [SMOKE_CODE=1] node smoke.mjs
// Prints one line per step and, last, what passed; exits non-zero on the
// first failure.
import assert from "node:assert/strict";

import { codesFor } from "./lib/codes.js";
import { connectSandbox } from "./lib/sandbox.js";

const T = () => AbortSignal.timeout(120_000);
const endpoint = process.env.EXECD_URL;
assert.ok(endpoint, "EXECD_URL=host:port is required");
const steps = [];

const sbx = await connectSandbox(
  { endpoint, token: process.env.EXECD_TOKEN || null },
  { readyTimeoutSeconds: 30 },
);
steps.push("ping");
try {
  const ex = await sbx.commands.run("echo smoke-$((6 * 7)); uname -s",
    undefined, undefined, T());
  assert.deepEqual(ex.logs.stdout.map((m) => m.text), ["smoke-42", "Linux"]);
  assert.equal(ex.exitCode, 0);
  steps.push("command");

  const path = `/tmp/smoke-${process.pid}.txt`;
  await sbx.files.writeFiles([{ path, data: "written through the SDK\n" }]);
  assert.equal(await sbx.files.readFile(path), "written through the SDK\n");
  steps.push("file");

  if (process.env.SMOKE_CODE) {
    const codes = codesFor(sbx);
    const out = (ex) => ex.logs.stdout.map((m) => m.text).join("");
    for (const [lang, code, want] of [
      ["python", "import sys; print(6 * 7, sys.version_info[0])", "42 3\n"],
      ["javascript", "console.log(6 * 7)", "42\n"],
      ["typescript", "const x: number = 6 * 7; console.log(x)", "42\n"],
      ["r", "cat(6 * 7, '\\n')", "42 \n"],
      // octave_kernel reads octave-cli through a terminal: CR LF.
      ["octave", "disp(6 * 7)", "42\r\n"],
      ["bash", "echo $((6 * 7))", "42\n"],
    ]) {
      const ex = await codes.run(code, { language: lang, signal: T() });
      assert.equal(ex.error, undefined, `${lang}: ${JSON.stringify(ex.error)}`);
      assert.equal(out(ex), want, lang);
      steps.push(lang);
    }
  }
} finally {
  await sbx.close();
}
console.log(steps.join(", "));
