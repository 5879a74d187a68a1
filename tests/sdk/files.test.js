// The filesystem API through the SDK's files service: writeFiles (in
// memory and streamed), readFile/readBytes (whole, Range, line window),
// getFileInfo, listDirectory, search, replaceContents, moveFiles,
// deleteFiles, deleteDirectories and setPermissions.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import { useExecd } from "./lib/execd.js";
import { expectApiError } from "./lib/sandbox.js";

describe("files", () => {
  const execd = useExecd();
  let tmp;

  before(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "execd-sdk-files-"));
  });
  after(() => {
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  const modeOf = (p) => (fs.statSync(p).mode & 0o7777).toString(8);
  const P = (...parts) => path.join(tmp, ...parts);

  it("writes and reads text, bytes and a streamed body", async () => {
    const sbx = await execd.connect();
    const bytes = new Uint8Array(70000).map((_, i) => i % 251);
    async function* gen() {
      for (let i = 0; i < 10; i++) yield new Uint8Array(100000).fill(65 + i);
    }
    await sbx.files.writeFiles([
      { path: P("w", "a.txt"), data: "hello\nworld\n", mode: 644 },
      { path: P("w", "b.bin"), data: bytes },
      { path: P("w", "s.bin"), data: gen() },
    ]);
    assert.equal(await sbx.files.readFile(P("w", "a.txt")), "hello\nworld\n");
    assert.equal(modeOf(P("w", "a.txt")), "644");
    assert.deepEqual(await sbx.files.readBytes(P("w", "b.bin")), bytes);
    const s = fs.readFileSync(P("w", "s.bin"));
    assert.equal(s.length, 1000000);
    assert.equal(s[0], 65);
    assert.equal(s[999999], 74);
    let n = 0;
    for await (const chunk of sbx.files.readBytesStream(P("w", "s.bin"))) n += chunk.length;
    assert.equal(n, 1000000);
  });

  it("writes many files at once", async () => {
    const sbx = await execd.connect();
    const entries = Array.from({ length: 50 }, (_, i) => ({
      path: P("many", `f${i}.txt`),
      data: `file ${i}`,
    }));
    await sbx.files.writeFiles(entries);
    for (let i = 0; i < 50; i++) {
      assert.equal(fs.readFileSync(P("many", `f${i}.txt`), "utf8"), `file ${i}`);
    }
    const list = await sbx.files.listDirectory({ path: P("many") });
    assert.equal(list.length, 50);
  });

  it("reads a byte range and a window of lines", async () => {
    const sbx = await execd.connect();
    fs.writeFileSync(P("lines.txt"), "line1\nline2\nline3\nline4\nline5");
    assert.equal(await sbx.files.readFile(P("lines.txt"), { range: "bytes=6-10" }), "line2");
    assert.equal(await sbx.files.readFile(P("lines.txt"), { offset: 2, limit: 2 }), "line2\nline3");
    const tail = await sbx.files.readBytes(P("lines.txt"), { range: "bytes=-5" });
    assert.equal(Buffer.from(tail).toString(), "line5");
  });

  it("reports file info, lists and searches", async () => {
    const sbx = await execd.connect();
    fs.mkdirSync(P("tree", "sub"), { recursive: true });
    fs.writeFileSync(P("tree", "a.py"), "print(1)\n");
    fs.writeFileSync(P("tree", "sub", "b.py"), "");
    fs.writeFileSync(P("tree", "c.txt"), "");
    fs.chmodSync(P("tree", "a.py"), 0o640);
    const info = await sbx.files.getFileInfo([P("tree", "a.py"), P("tree", "sub")]);
    const a = info[P("tree", "a.py")];
    assert.equal(a.type, "file");
    assert.equal(a.size, 9);
    assert.equal(a.mode, 640);
    assert.ok(a.modifiedAt instanceof Date && !Number.isNaN(a.modifiedAt.getTime()));
    assert.ok(a.createdAt instanceof Date);
    assert.equal(info[P("tree", "sub")].type, "directory");
    const list = await sbx.files.listDirectory({ path: P("tree"), depth: 2 });
    assert.deepEqual(
      list.map((e) => path.relative(P("tree"), e.path)),
      ["a.py", "c.txt", "sub", "sub/b.py"],
    );
    const found = await sbx.files.search({ path: P("tree"), pattern: "*.py" });
    assert.deepEqual(found.map((e) => path.relative(P("tree"), e.path)).sort(), ["a.py", "sub/b.py"]);
    await expectApiError(sbx.files.getFileInfo([P("tree", "missing")]), { status: 404, code: "FILE_NOT_FOUND" });
  });

  it("replaces contents, literally, with counts", async () => {
    const sbx = await execd.connect();
    fs.writeFileSync(P("r.txt"), "a+b a+b c");
    fs.chmodSync(P("r.txt"), 0o600);
    const res = await sbx.files.replaceContentsDetailed([
      { path: P("r.txt"), oldContent: "a+b", newContent: "x" },
    ]);
    assert.deepEqual(res, [{ path: P("r.txt"), replacedCount: 2 }]);
    assert.equal(fs.readFileSync(P("r.txt"), "utf8"), "x x c");
    assert.equal(modeOf(P("r.txt")), "600");
    await sbx.files.replaceContents([{ path: P("r.txt"), oldContent: "c", newContent: "d" }]);
    assert.equal(fs.readFileSync(P("r.txt"), "utf8"), "x x d");
  });

  it("moves, refuses to overwrite, and deletes", async () => {
    const sbx = await execd.connect();
    fs.writeFileSync(P("m1"), "1");
    fs.writeFileSync(P("m2"), "2");
    await sbx.files.moveFiles([{ src: P("m1"), dest: P("moved", "deep", "m1") }]);
    assert.equal(fs.readFileSync(P("moved", "deep", "m1"), "utf8"), "1");
    await expectApiError(sbx.files.moveFiles([{ src: P("m2"), dest: P("moved", "deep", "m1") }]), { status: 409 });
    assert.equal(fs.readFileSync(P("m2"), "utf8"), "2");
    await sbx.files.deleteFiles([P("m2")]);
    assert.ok(!fs.existsSync(P("m2")));
    await sbx.files.deleteDirectories([P("moved")]);
    assert.ok(!fs.existsSync(P("moved")));
  });

  it("sets permissions and owners (nobody/nogroup)", async () => {
    const sbx = await execd.connect();
    fs.writeFileSync(P("perm"), "p");
    await sbx.files.setPermissions([{ path: P("perm"), mode: 604, owner: "nobody", group: "nogroup" }]);
    assert.equal(modeOf(P("perm")), "604");
    const info = await sbx.files.getFileInfo([P("perm")]);
    assert.equal(info[P("perm")].owner, "nobody");
    assert.equal(info[P("perm")].group, "nogroup");
    assert.equal(info[P("perm")].mode, 604);
  });

  it("turns mistakes into API errors", async () => {
    const sbx = await execd.connect();
    // Downloads are read raw by the SDK: it keeps the status, not our code.
    await expectApiError(sbx.files.readFile(P("nope")), { status: 404 });
    await expectApiError(sbx.files.readFile(P("lines.txt"), { range: "bytes=900-" }), { status: 416 });
    await expectApiError(sbx.files.listDirectory({ path: P("lines.txt") }), { status: 400 });
  });
});
