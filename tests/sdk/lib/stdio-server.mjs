// stdio-server.mjs -- an MCP server written with the official SDK, which
// execd's gateway runs as a policy file's mcp_servers entry (test_mcp.py,
// mcp.test.js).  Its tools:
//   echo    {text}           answers the text;
//   slow    {steps, ms, marker?}  sends `steps` progress notifications,
//           `ms` apart, then answers; if the call is cancelled it writes
//           "cancelled" to the marker file (when given) and stops;
//   die     {code}           exits the process with that status mid-call;
//   flood   {mib}            writes one line of `mib` MiB to stdout;
//   env     {name}           answers an environment variable's value.
// Without arguments it serves them on stdio.  With --http PORT it serves
// them over Streamable HTTP on 127.0.0.1:PORT/mcp (a session per
// initialize), for a url entry.  With --pages N it is instead a bare
// JSON-RPC loop on stdio (no SDK) whose tools/list gives one tool a page,
// p0 .. pN-1, each page but the last with a nextCursor, and whose
// tools/call answers the tool's name.  It writes "started PID" (or
// "listening PID") to stderr, so a test sees restarts.
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { createInterface } from "node:readline";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from
  "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from
  "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const text = (t) => ({ content: [{ type: "text", text: String(t) }] });

function makeServer() {
  const server = new McpServer({ name: "gw-test", version: "1.0.0" });

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

  return server;
}

function servePages(pages) {
  const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
  createInterface({ input: process.stdin }).on("line", (line) => {
    const m = JSON.parse(line);
    if (m.id === undefined)
      return;
    if (m.method === "initialize") {
      send({ jsonrpc: "2.0", id: m.id, result: {
        protocolVersion: m.params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "pages", version: "1" } } });
    } else if (m.method === "tools/list") {
      const i = Number(m.params?.cursor ?? "0");
      const result = { tools: [{ name: `p${i}`, description: `page ${i}`,
        inputSchema: { type: "object" } }] };
      if (i + 1 < pages)
        result.nextCursor = String(i + 1);
      send({ jsonrpc: "2.0", id: m.id, result });
    } else if (m.method === "tools/call") {
      send({ jsonrpc: "2.0", id: m.id, result: {
        content: [{ type: "text", text: `called ${m.params.name}` }] } });
    } else {
      send({ jsonrpc: "2.0", id: m.id, error: { code: -32601,
        message: "no such method" } });
    }
  });
  process.stderr.write(`started ${process.pid}\n`);
}

function serveHttp(port) {
  const sessions = {};
  createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const msg = body ? JSON.parse(body) : undefined;
    const sid = req.headers["mcp-session-id"];
    let t = sid ? sessions[sid] : undefined;
    if (!t && !sid && isInitializeRequest(msg)) {
      t = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => { sessions[id] = t; } });
      await makeServer().connect(t);
    }
    if (!t) {
      res.writeHead(sid ? 404 : 400).end();
      return;
    }
    await t.handleRequest(req, res, msg);
  }).listen(port, "127.0.0.1", () =>
    process.stderr.write(`listening ${process.pid}\n`));
}

const arg = (flag) => {
  const i = process.argv.indexOf(flag);
  return i > 0 ? Number(process.argv[i + 1]) : undefined;
};
if (arg("--pages") !== undefined) {
  servePages(arg("--pages"));
} else if (arg("--http") !== undefined) {
  serveHttp(arg("--http"));
} else {
  process.stderr.write(`started ${process.pid}\n`);
  await makeServer().connect(new StdioServerTransport());
}
