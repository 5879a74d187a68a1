// stdio-server.mjs -- an MCP server on stdio, written with the official
// SDK, that execd's gateway runs as a policy file's mcp_servers entry
// (test_mcp.py, mcp.test.js).  Its tools:
//   echo    {text}           answers the text;
//   slow    {steps, ms, marker?}  sends `steps` progress notifications,
//           `ms` apart, then answers; if the call is cancelled it writes
//           "cancelled" to the marker file (when given) and stops;
//   die     {code}           exits the process with that status mid-call;
//   flood   {mib}            writes one line of `mib` MiB to stdout;
//   env     {name}           answers an environment variable's value.
// With --pages N it is instead a bare JSON-RPC loop (no SDK) whose
// tools/list gives one tool a page, p0 .. pN-1, each page but the last
// with a nextCursor, and whose tools/call answers the tool's name.
// Writes "started PID" to stderr at start, so a test sees restarts.
import { writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from
  "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const pagesAt = process.argv.indexOf("--pages");
if (pagesAt > 0) {
  const pages = Number(process.argv[pagesAt + 1]);
  const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
  createInterface({ input: process.stdin }).on("line", (line) => {
    const m = JSON.parse(line);
    if (m.id === undefined)
      return;
    if (m.method === "initialize")
      send({ jsonrpc: "2.0", id: m.id, result: {
        protocolVersion: m.params.protocolVersion, capabilities: { tools: {} },
        serverInfo: { name: "pages", version: "1" } } });
    else if (m.method === "tools/list") {
      const i = Number(m.params?.cursor ?? "0");
      const result = { tools: [{ name: `p${i}`, description: `page ${i}`,
        inputSchema: { type: "object" } }] };
      if (i + 1 < pages)
        result.nextCursor = String(i + 1);
      send({ jsonrpc: "2.0", id: m.id, result });
    } else if (m.method === "tools/call")
      send({ jsonrpc: "2.0", id: m.id, result: {
        content: [{ type: "text", text: `called ${m.params.name}` }] } });
    else
      send({ jsonrpc: "2.0", id: m.id, error: { code: -32601,
        message: "no such method" } });
  });
  process.stderr.write(`started ${process.pid}\n`);
} else {
const server = new McpServer({ name: "gw-test", version: "1.0.0" });
const text = (t) => ({ content: [{ type: "text", text: String(t) }] });

server.registerTool("echo", {
  description: "Answer the text given.",
  inputSchema: { text: z.string() },
}, async ({ text: t }) => text(`echo: ${t}`));

server.registerTool("slow", {
  description: "Send progress, then answer.",
  inputSchema: { steps: z.number().int(), ms: z.number().int(),
    marker: z.string().optional() },
}, async ({ steps, ms, marker }, extra) => {
  const token = extra._meta?.progressToken;
  for (let i = 1; i <= steps; i++) {
    await new Promise((res) => setTimeout(res, ms));
    if (extra.signal.aborted) {
      if (marker) writeFileSync(marker, "cancelled");
      return text("cancelled");
    }
    if (token !== undefined)
      await extra.sendNotification({ method: "notifications/progress",
        params: { progressToken: token, progress: i, total: steps,
          message: `step ${i}` } });
  }
  return text(`done after ${steps} steps`);
});

server.registerTool("die", {
  description: "Exit the process mid-call.",
  inputSchema: { code: z.number().int() },
}, async ({ code }) => {
  process.stderr.write(`dying with ${code}\n`);
  setTimeout(() => process.exit(code), 50);
  return new Promise(() => {});
});

server.registerTool("flood", {
  description: "Write one huge line to stdout.",
  inputSchema: { mib: z.number().int() },
}, async ({ mib }) => {
  const chunk = "x".repeat(1 << 20);
  for (let i = 0; i < mib; i++)
    if (!process.stdout.write(chunk))
      await new Promise((res) => process.stdout.once("drain", res));
  return new Promise(() => {});
});

server.registerTool("env", {
  description: "Answer an environment variable.",
  inputSchema: { name: z.string() },
}, async ({ name }) => text(process.env[name] ?? "(unset)"));

process.stderr.write(`started ${process.pid}\n`);
await server.connect(new StdioServerTransport());
}
