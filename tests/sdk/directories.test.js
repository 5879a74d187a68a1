// POST /directories through the SDK's files service.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import { useExecd } from "./lib/execd.js";
import { expectApiError } from "./lib/sandbox.js";

describe("files.createDirectories", () => {
  const execd = useExecd();
  let tmp;

  before(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "execd-sdk-"));
  });
  after(() => {
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  const modeOf = (p) => fs.statSync(p).mode & 0o7777;

  it("creates nested directories with mode 755", async () => {
    const sbx = await execd.connect();
    const leaf = path.join(tmp, "a", "b", "c");
    await sbx.files.createDirectories([{ path: leaf, mode: 755 }]);
    assert.ok(fs.statSync(leaf).isDirectory());
    assert.equal(modeOf(leaf).toString(8), "755");
    assert.ok(fs.statSync(path.join(tmp, "a", "b")).isDirectory());
  });

  it("applies a mode that the umask would not give (711, 700)", async () => {
    const sbx = await execd.connect();
    const d1 = path.join(tmp, "m", "x711");
    const d2 = path.join(tmp, "m", "y700");
    await sbx.files.createDirectories([
      { path: d1, mode: 711 },
      { path: d2, mode: 700 },
    ]);
    assert.equal(modeOf(d1).toString(8), "711");
    assert.equal(modeOf(d2).toString(8), "700");
  });

  it("is idempotent on an existing directory", async () => {
    const sbx = await execd.connect();
    const d = path.join(tmp, "again");
    await sbx.files.createDirectories([{ path: d, mode: 755 }]);
    await sbx.files.createDirectories([{ path: d, mode: 755 }]);
    assert.ok(fs.statSync(d).isDirectory());
  });

  it("sends mode 755 when the caller gives none", async () => {
    const sbx = await execd.connect();
    const d = path.join(tmp, "nomode", "leaf");
    await sbx.files.createDirectories([{ path: d }]);
    assert.equal(modeOf(d).toString(8), "755");
  });

  it("creates nothing when the request is refused", async () => {
    const sbx = await execd.connect();
    const good = path.join(tmp, "refused", "good");
    await expectApiError(
      sbx.files.createDirectories([
        { path: good, mode: 755 },
        { path: path.join(tmp, "refused", "bad"), mode: 789 },
      ]),
      { status: 400, code: "INVALID_REQUEST_BODY" },
    );
    assert.equal(fs.existsSync(good), false);
  });
});
