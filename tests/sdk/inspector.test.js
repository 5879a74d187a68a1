// The MCP Inspector's CLI mode (@modelcontextprotocol/inspector, pinned in
// package.json) against execd's /mcp: it lists the tools and calls one
// over Streamable HTTP with the token as a Bearer header, and without the
// token it is refused.  Each run of the CLI is a process of its own,
// bounded in time and stopped by pid.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";

import { useExecd } from "./lib/execd.js";

const TOKEN = "inspector-test-token-9f3b";
const CLI = path.join(path.dirname(fileURLToPath(import.meta.url)),
  "node_modules", ".bin", "mcp-inspector");

/** Run the Inspector's CLI; its exit status, stdout and stderr. */
function inspect(url, args, token = TOKEN) {
  const argv = ["--cli", url, "--transport", "http", ...args];
  if (token) argv.push("--header", `Authorization: Bearer ${token}`);
  return new Promise((resolve) => {
    const p = spawn(CLI, argv, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (b) => { out += b; });
    p.stderr.on("data", (b) => { err += b; });
    const t = setTimeout(() => p.kill("SIGKILL"), 45_000);
    p.on("exit", (code, signal) => {
      clearTimeout(t);
      resolve({ code, signal, out, err });
    });
  });
}

describe("the MCP Inspector's CLI", () => {
  const execd = useExecd({ token: TOKEN });

  it("lists execd's tools", async () => {
    const r = await inspect(`${execd.daemon.url}/mcp`,
      ["--method", "tools/list"]);
    assert.equal(r.code, 0, r.err + r.out);
    const names = JSON.parse(r.out).tools.map((t) => t.name);
    for (const n of ["run_code", "run_command", "read_file", "write_file",
      "edit_file", "list_directory", "create_context"]) {
      assert.ok(names.includes(n), `${n} missing from ${names}`);
    }
  });

  it("calls run_command", async () => {
    const r = await inspect(`${execd.daemon.url}/mcp`, ["--method",
      "tools/call", "--tool-name", "run_command", "--tool-arg",
      "command=echo inspected"]);
    assert.equal(r.code, 0, r.err + r.out);
    const res = JSON.parse(r.out);
    assert.equal(res.structuredContent.exit_code, 0, r.out);
    assert.equal(res.structuredContent.stdout, "inspected\n");
  });

  it("is refused without the token", async () => {
    const r = await inspect(`${execd.daemon.url}/mcp`,
      ["--method", "tools/list"], null);
    assert.notEqual(r.code, 0, r.out);
    assert.match(r.err + r.out, /Unauthorized/);
  });
});
