// Sandbox.connect() through the direct adapter, with the SDK's own
// readiness check (GET /ping, polled until it answers 2xx).
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Sandbox } from "@alibaba-group/opensandbox";

import { useExecd } from "./lib/execd.js";
import { SANDBOX_ID } from "./lib/sandbox.js";

describe("connect", () => {
  const execd = useExecd();

  it("passes the SDK readiness check and gives a Sandbox", async () => {
    const sbx = await execd.connect({ skipHealthCheck: false });
    assert.ok(sbx instanceof Sandbox);
    assert.equal(sbx.id, SANDBOX_ID);
    await execd.daemon.waitLog(/GET \/ping 200/);
  });

  it("reports the daemon healthy (health.ping, isHealthy)", async () => {
    const sbx = await execd.connect({ skipHealthCheck: true });
    assert.equal(await sbx.health.ping(), true);
    assert.equal(await sbx.isHealthy(), true);
  });

  it("hands the SDK the daemon's endpoint", async () => {
    const sbx = await execd.connect({ skipHealthCheck: true });
    const ep = await sbx.getEndpoint(44772);
    assert.equal(ep.endpoint, execd.daemon.endpoint);
    assert.equal(await sbx.getEndpointUrl(44772), execd.daemon.url);
  });
});
