// GET /metrics through the SDK's metrics service.
import assert from "node:assert/strict";
import os from "node:os";
import { describe, it } from "node:test";

import { useExecd } from "./lib/execd.js";

const MIB = 1024 * 1024;

function checkMetrics(m) {
  assert.ok(Number.isFinite(m.cpuCount) && m.cpuCount >= 1, `cpuCount ${m.cpuCount}`);
  assert.ok(m.cpuCount <= os.cpus().length, `cpuCount ${m.cpuCount} > host CPUs`);
  assert.ok(
    Number.isFinite(m.cpuUsedPercentage) && m.cpuUsedPercentage >= 0,
    `cpuUsedPercentage ${m.cpuUsedPercentage}`,
  );
  assert.ok(m.memoryTotalMiB > 0, `memoryTotalMiB ${m.memoryTotalMiB}`);
  // A cgroup limit can only lower the total below the host's memory.
  assert.ok(
    m.memoryTotalMiB <= os.totalmem() / MIB + 1,
    `memoryTotalMiB ${m.memoryTotalMiB} > host ${os.totalmem() / MIB}`,
  );
  assert.ok(
    m.memoryUsedMiB > 0 && m.memoryUsedMiB <= m.memoryTotalMiB,
    `memoryUsedMiB ${m.memoryUsedMiB} of ${m.memoryTotalMiB}`,
  );
  assert.ok(
    Math.abs(m.timestamp - Date.now()) < 60_000,
    `timestamp ${m.timestamp} is not now (ms)`,
  );
}

describe("metrics", () => {
  const execd = useExecd();

  it("getMetrics() returns sane CPU and memory figures", async () => {
    const sbx = await execd.connect();
    const m = await sbx.getMetrics();
    assert.deepEqual(Object.keys(m).sort(), [
      "cpuCount",
      "cpuUsedPercentage",
      "memoryTotalMiB",
      "memoryUsedMiB",
      "timestamp",
    ]);
    checkMetrics(m);
  });

  it("metrics.getMetrics() answers repeatedly on one connection", async () => {
    const sbx = await execd.connect();
    let last = 0;
    for (let i = 0; i < 5; i++) {
      const m = await sbx.metrics.getMetrics();
      checkMetrics(m);
      assert.ok(m.timestamp >= last);
      last = m.timestamp;
    }
  });
});
