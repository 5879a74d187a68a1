// The code-interpreter "codes" service (/code, /code/context...) for tests.
//
// The official JS code-interpreter SDK (@alibaba-group/opensandbox-code-
// interpreter) is not published on npm, so there is no official object to
// drive these routes with.  Its Codes adapter is a thin layer over pieces
// of the published SDK, and codesFor() rebuilds that layer from the same
// pieces of the connected Sandbox, request for request:
//   - JSON calls go through the Sandbox's own openapi-fetch execd client
//     (same base URL, headers, timeouts), errors mapped to
//     SandboxApiException as the SDK maps them;
//   - POST /code streams through the Sandbox's own streaming fetch and SSE
//     parser (the commands service's streamExecution), and events are
//     folded into an Execution by the SDK's ExecutionEventDispatcher.
// Both internals are reached as plain properties of sandbox.commands; the
// SDK version is pinned in package.json, and codesFor() checks they exist.

import {
  ExecutionEventDispatcher,
  InvalidArgumentException,
  SandboxApiException,
  SandboxError,
} from "@alibaba-group/opensandbox";

/** The SDK's mapping of a failed openapi-fetch call to an exception. */
function throwOnError({ error, response }, fallback) {
  if (!error) return;
  const msg = error?.message ?? error?.error?.message ?? fallback;
  const code = error?.code ?? error?.error?.code;
  throw new SandboxApiException({
    message: msg,
    statusCode: response.status ?? 0,
    requestId: response.headers.get("x-request-id") ?? undefined,
    error: new SandboxError(
      code ? String(code) : SandboxError.UNEXPECTED_RESPONSE,
      String(msg ?? ""),
    ),
    rawBody: error,
  });
}

function nonBlank(v, what) {
  if (!v?.trim()) throw new InvalidArgumentException({ message: `${what} cannot be empty` });
}

/** A Codes service (createContext, run, interrupt, ...) for Sandbox sbx. */
export function codesFor(sbx) {
  const commands = sbx.commands;
  const client = commands.client;
  if (!client || typeof client.POST !== "function" ||
      typeof commands.streamExecution !== "function") {
    throw new Error("this SDK version lacks commands.client/streamExecution");
  }

  const codes = {
    async createContext(language) {
      const { data, error, response } = await client.POST("/code/context", {
        body: { language },
      });
      throwOnError({ error, response }, "Create code context failed");
      if (!data || typeof data !== "object") {
        throw new Error("Create code context failed: unexpected response shape");
      }
      if (typeof data.language !== "string" || !data.language) {
        throw new Error("Create code context failed: missing language");
      }
      return { id: data.id, language: data.language };
    },

    async getContext(contextId) {
      nonBlank(contextId, "contextId");
      const { data, error, response } = await client.GET("/code/contexts/{context_id}", {
        params: { path: { context_id: contextId } },
      });
      throwOnError({ error, response }, "Get code context failed");
      if (!data || typeof data !== "object" || typeof data.language !== "string" || !data.language) {
        throw new Error("Get code context failed: unexpected response shape");
      }
      return { id: data.id, language: data.language };
    },

    async listContexts(language) {
      const { data, error, response } = await client.GET("/code/contexts", {
        params: language ? { query: { language } } : undefined,
      });
      throwOnError({ error, response }, "List code contexts failed");
      if (!Array.isArray(data)) {
        throw new Error("List code contexts failed: unexpected response shape");
      }
      return data
        .filter((c) => c && typeof c === "object")
        .map((c) => ({ id: c.id, language: c.language }));
    },

    async deleteContext(contextId) {
      nonBlank(contextId, "contextId");
      const { error, response } = await client.DELETE("/code/contexts/{context_id}", {
        params: { path: { context_id: contextId } },
      });
      throwOnError({ error, response }, "Delete code context failed");
    },

    async deleteContexts(language) {
      const { error, response } = await client.DELETE("/code/contexts", {
        params: { query: { language } },
      });
      throwOnError({ error, response }, "Delete code contexts failed");
    },

    /** DELETE /code?id=; the id is the execution's (its init event text). */
    async interrupt(executionId) {
      nonBlank(executionId, "executionId");
      const { error, response } = await client.DELETE("/code", {
        params: { query: { id: executionId } },
      });
      throwOnError({ error, response }, "Interrupt code failed");
    },

    /** The raw events of POST /code with body req ({code, context}). */
    runStream(req, signal) {
      return commands.streamExecution(
        { pathname: "/code", body: req, fallbackErrorMessage: "Run code failed" },
        signal,
      );
    },

    /**
     * Run code; opts.context ({id, language}) or opts.language (default
     * python, a language-only run).  Resolves with the SDK's Execution:
     * {id, logs: {stdout, stderr}, result[], executionCount, complete, error}.
     */
    async run(code, opts = {}) {
      if (!code.trim()) {
        throw new InvalidArgumentException({ message: "Code cannot be empty" });
      }
      if (opts.context && opts.language && opts.context.language !== opts.language) {
        throw new InvalidArgumentException({
          message: `language '${opts.language}' must match context.language '${opts.context.language}'`,
        });
      }
      const context = opts.context ?? { language: opts.language ?? "python" };
      const req = { code, context: { id: context.id, language: context.language } };
      const execution = { logs: { stdout: [], stderr: [] }, result: [] };
      const dispatcher = new ExecutionEventDispatcher(execution, opts.handlers);
      for await (const ev of codes.runStream(req, opts.signal)) {
        await dispatcher.dispatch(ev);
      }
      return execution;
    },
  };
  return codes;
}
