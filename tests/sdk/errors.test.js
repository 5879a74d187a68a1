// Server errors reach the caller as SandboxApiException with the HTTP
// status, the JSON "code" (err.error.code) and "message".
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import { SandboxApiException, SandboxException } from "@alibaba-group/opensandbox";

import { useExecd } from "./lib/execd.js";
import { expectApiError } from "./lib/sandbox.js";

describe("errors", () => {
  const execd = useExecd();
  let tmp;

  before(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "execd-sdk-"));
  });
  after(() => {
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it("409 ALREADY_EXISTS when a parent is a regular file", async () => {
    const sbx = await execd.connect();
    const file = path.join(tmp, "plain-file");
    fs.writeFileSync(file, "x");
    const err = await expectApiError(
      sbx.files.createDirectories([{ path: path.join(file, "sub"), mode: 755 }]),
      { status: 409, code: "ALREADY_EXISTS" },
    );
    assert.ok(err instanceof SandboxException);
    assert.equal(err.name, "SandboxApiException");
    assert.match(err.message, /not a directory/);
    assert.equal(err.error.message, err.message);
    assert.deepEqual(Object.keys(err.rawBody).sort(), ["code", "message"]);
    assert.equal(fs.statSync(file).isFile(), true);
  });

  it("400 INVALID_REQUEST_BODY for a relative path", async () => {
    const sbx = await execd.connect();
    const err = await expectApiError(
      sbx.files.createDirectories([{ path: "relative/dir", mode: 755 }]),
      { status: 400, code: "INVALID_REQUEST_BODY" },
    );
    assert.match(err.message, /relative\/dir/);
  });

  it("the exception is a SandboxApiException, not a parse error", async () => {
    const sbx = await execd.connect();
    await assert.rejects(
      sbx.files.createDirectories([{ path: "x", mode: 755 }]),
      SandboxApiException,
    );
  });
});
