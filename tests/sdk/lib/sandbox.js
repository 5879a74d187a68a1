// Point the official SDK straight at an execd, with no lifecycle server.
//
// The SDK only reaches execd through Sandbox.create/connect, which ask the
// lifecycle server's "endpoint" call where execd is.  connect() accepts an
// AdapterFactory, so directAdapterFactory() supplies a lifecycle stack that
// is a plain object answering getSandboxEndpoint() with the daemon's
// "host:port" and headers (as the lifecycle server would, access token
// included), and takes the execd stack unchanged from the SDK's
// DefaultAdapterFactory.  Every other lifecycle call, and the egress
// sidecar, rejects: nothing here talks HTTP except the SDK's execd clients.

import assert from "node:assert/strict";

import {
  ConnectionConfig,
  DEFAULT_EXECD_PORT,
  DefaultAdapterFactory,
  Sandbox,
  SandboxApiException,
} from "@alibaba-group/opensandbox";

export const SANDBOX_ID = "execd-direct";

const LIFECYCLE_CALLS = [
  "createSandbox",
  "getSandbox",
  "listSandboxes",
  "patchSandboxMetadata",
  "deleteSandbox",
  "pauseSandbox",
  "resumeSandbox",
  "renewSandboxExpiration",
  "createSnapshot",
  "getSnapshot",
  "listSnapshots",
  "deleteSnapshot",
  "getSignedEndpoint",
];

const EGRESS_CALLS = [
  "getPolicy",
  "patchRules",
  "deleteRules",
  "create",
  "get",
  "patch",
  "delete",
  "listCredentials",
  "getCredential",
  "listBindings",
  "getBinding",
];

function unavailable(names, what) {
  const o = {};
  for (const n of names) {
    o[n] = async () => {
      throw new Error(`${what}.${n}() is not available: the tests talk to execd directly`);
    };
  }
  return o;
}

/**
 * An AdapterFactory whose execd is at `endpoint` ("host:port", no scheme)
 * and whose lifecycle server would hand out `headers` with it.
 */
export function directAdapterFactory({ endpoint, headers = {} }) {
  const sdk = new DefaultAdapterFactory();
  return {
    createLifecycleStack() {
      return {
        sandboxes: {
          ...unavailable(LIFECYCLE_CALLS, "sandboxes"),
          async getSandboxEndpoint(sandboxId, port) {
            if (port !== DEFAULT_EXECD_PORT) {
              // The egress sidecar (18080): no such thing here.  The SDK
              // asks for it on connect but only uses it for egress calls.
              return { endpoint: `egress.invalid:${port}`, headers: {} };
            }
            return { endpoint, headers: { ...headers } };
          },
          invalidateEndpointCache() {},
        },
      };
    },
    createExecdStack(opts) {
      return sdk.createExecdStack(opts);
    },
    createEgressStack() {
      const egress = unavailable(EGRESS_CALLS, "egress");
      return { egress, credentialVault: egress };
    },
  };
}

/**
 * Connect an SDK Sandbox to the Execd handle `daemon`.
 *
 * opts.token: the access token the lifecycle endpoint call hands out with
 *   the endpoint (X-EXECD-ACCESS-TOKEN); defaults to the daemon's own token,
 *   null for none.
 * opts.headers: user headers (ConnectionConfig headers), sent on every call.
 * opts.skipHealthCheck: false (default) makes connect() poll GET /ping.
 * opts.readyTimeoutSeconds, opts.requestTimeoutSeconds: SDK timeouts.
 * The caller closes the Sandbox (sandbox.close()), or lets useExecd do it.
 */
export async function connectSandbox(daemon, opts = {}) {
  const token = opts.token === undefined ? daemon.token : opts.token;
  const endpointHeaders =
    token == null ? {} : { "X-EXECD-ACCESS-TOKEN": token };
  const connectionConfig = new ConnectionConfig({
    // Only the lifecycle base URL is built from this; it is never called.
    domain: "lifecycle.invalid",
    protocol: "http",
    headers: opts.headers ?? {},
    requestTimeoutSeconds: opts.requestTimeoutSeconds ?? 30,
    disableMetrics: true,
  });
  return await Sandbox.connect({
    sandboxId: SANDBOX_ID,
    connectionConfig,
    adapterFactory: directAdapterFactory({
      endpoint: daemon.endpoint,
      headers: endpointHeaders,
    }),
    skipHealthCheck: opts.skipHealthCheck ?? false,
    readyTimeoutSeconds: opts.readyTimeoutSeconds ?? 10,
    healthCheckPollingInterval: opts.healthCheckPollingInterval,
  });
}

/**
 * Await `promise` and check that it rejects with the SDK's
 * SandboxApiException carrying HTTP `status` and, if given, the server's
 * JSON `code` (err.error.code).  Returns the exception.
 */
export async function expectApiError(promise, { status, code } = {}) {
  let err;
  try {
    await promise;
  } catch (e) {
    err = e;
  }
  assert.ok(err, `expected a SandboxApiException ${status}, the call succeeded`);
  assert.ok(
    err instanceof SandboxApiException,
    `expected a SandboxApiException, got ${err?.name}: ${err?.message}`,
  );
  if (status !== undefined) assert.equal(err.statusCode, status);
  if (code !== undefined) assert.equal(err.error?.code, code);
  return err;
}
