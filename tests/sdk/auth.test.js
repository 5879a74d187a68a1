// --access-token: the SDK must send X-EXECD-ACCESS-TOKEN, whether it comes
// with the endpoint (as a lifecycle server hands it out) or from the
// user's ConnectionConfig headers; a wrong or missing one is a 401.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";


import { useExecd } from "./lib/execd.js";
import { expectApiError } from "./lib/sandbox.js";

const TOKEN = "sdk-test-token-5f3a";

describe("access token", () => {
  const execd = useExecd({ token: TOKEN });

  it("works with the token from the endpoint headers", async () => {
    const sbx = await execd.connect({ skipHealthCheck: false });
    const m = await sbx.getMetrics();
    assert.ok(m.cpuCount >= 1);
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "execd-sdk-"));
    try {
      await sbx.files.createDirectories([{ path: path.join(tmp, "d"), mode: 755 }]);
      assert.ok(fs.statSync(path.join(tmp, "d")).isDirectory());
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it("works with the token in ConnectionConfig headers", async () => {
    const sbx = await execd.connect({
      token: null,
      headers: { "X-EXECD-ACCESS-TOKEN": TOKEN },
      skipHealthCheck: false,
    });
    assert.ok((await sbx.getMetrics()).memoryTotalMiB > 0);
  });

  it("a wrong token gives SandboxApiException 401", async () => {
    const sbx = await execd.connect({ token: "wrong", skipHealthCheck: true });
    await expectApiError(sbx.getMetrics(), { status: 401 });
    const err = await expectApiError(
      sbx.files.createDirectories([{ path: path.join(os.tmpdir(), "execd-sdk-never"), mode: 755 }]),
      { status: 401 },
    );
    // The 401 body is upstream's {"error": "..."}: no code, so the SDK
    // reports UNEXPECTED_RESPONSE and keeps the body.
    assert.equal(err.error.code, "UNEXPECTED_RESPONSE");
    assert.match(err.rawBody.error, /X-EXECD-ACCESS-TOKEN/);
    // /ping needs no token (as in 1.1: a probe sends none)
    assert.equal(await sbx.isHealthy(), true);
  });

  it("no token gives SandboxApiException 401", async () => {
    const sbx = await execd.connect({ token: null, skipHealthCheck: true });
    await expectApiError(sbx.getMetrics(), { status: 401 });
  });

  it("the readiness check passes without the token, the API does not", async () => {
    // As in 1.1: GET /ping needs no token (a probe sends none), so the
    // SDK's readiness check passes; the first real call is refused.
    const sbx = await execd.connect({ token: "wrong", readyTimeoutSeconds: 5 });
    await expectApiError(sbx.getMetrics(), { status: 401 });
  });
});
