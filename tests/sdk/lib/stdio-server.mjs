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
// With --many N it also has tools t0 .. tN-1, to make tools/list page.
// Writes "started PID" to stderr at start, so a test sees restarts.
import { writeFileSync } from "node:fs";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from
  "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

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

const many = process.argv.indexOf("--many");
if (many > 0)
  for (let i = 0; i < Number(process.argv[many + 1]); i++)
    server.registerTool(`t${i}`, { description: `tool ${i}` },
      async () => text(`t${i}`));

process.stderr.write(`started ${process.pid}\n`);
await server.connect(new StdioServerTransport());
