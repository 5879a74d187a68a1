// Start and stop a real execd for the SDK tests.
//
// startExecd() spawns $EXECD_BIN (default build/execd; a relative path is
// taken from the repository root) on 127.0.0.1 at a port the kernel picks,
// reads the port from the "listening on" log line, and returns a handle
// whose stop() sends SIGTERM by pid and resolves with the exit status.
// Every wait is bounded.  Daemons still running when the test process exits
// are killed by pid.
//
// useExecd() is the usual way in from a test file: it registers node:test
// hooks that start one daemon before the tests of the current file (or
// describe block), print its log after a failed test, close the SDK clients
// made through it, and stop it at the end, failing if it did not exit 0.

import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, afterEach, before } from "node:test";

import { connectSandbox } from "./sandbox.js";

export const REPO_ROOT = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "..",
  "..",
  "..",
);

const LOG_CAP = 256 * 1024;
const live = new Set();

function killLive() {
  for (const d of live) {
    try {
      process.kill(d.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}
process.on("exit", killLive);
// The runner stops a test file with a signal when it is itself stopped (or
// its output pipe closes); without a handler, "exit" would not run.
for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"]) {
  process.once(sig, () => {
    killLive();
    process.kill(process.pid, sig);
  });
}

/** The daemon binary: $EXECD_BIN, relative paths taken from the repo root. */
export function execdBin() {
  return path.resolve(REPO_ROOT, process.env.EXECD_BIN || "build/execd");
}

const LISTEN_RE = /listening on (?:\[([0-9a-f:]+)\]|([0-9.]+)):(\d+)/;

class Execd {
  constructor(proc) {
    this.proc = proc;
    this.pid = proc.pid;
    this.host = null;
    this.port = null;
    this.token = undefined;
    this._log = "";
    this._spawnError = null;
    this._exit = new Promise((resolve) => {
      proc.on("exit", (code, signal) => {
        live.delete(this);
        resolve({ code, signal });
      });
      // A failed spawn (ENOENT, EACCES) gives "error" and no "exit".
      proc.on("error", (err) => {
        this._spawnError = err;
        live.delete(this);
        resolve({ code: null, signal: null });
      });
    });
    proc.stderr.setEncoding("utf8");
    proc.stderr.on("data", (s) => {
      this._log += s;
      if (this._log.length > LOG_CAP) this._log = this._log.slice(-LOG_CAP);
      if (process.env.EXECD_TEST_VERBOSE) process.stderr.write(s);
    });
  }

  /** "host:port", the form a lifecycle server hands to the SDK (no scheme). */
  get endpoint() {
    const h = this.host.includes(":") ? `[${this.host}]` : this.host;
    return `${h}:${this.port}`;
  }

  get url() {
    return `http://${this.endpoint}`;
  }

  /** Everything the daemon logged so far (the last 256 KiB). */
  log() {
    return this._log;
  }

  /**
   * Wait up to timeoutMs for a log line matching re (request lines are
   * written after the response, so they can lag the SDK call); resolves
   * with the match, rejects with the log on timeout.
   */
  async waitLog(re, timeoutMs = 5000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = re.exec(this._log);
      if (m) return m;
      if (Date.now() > deadline) {
        throw new Error(`no log line matches ${re} in ${timeoutMs} ms:\n` +
          this._log.slice(-3000));
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  get running() {
    return (
      this._spawnError === null &&
      this.proc.exitCode === null &&
      this.proc.signalCode === null
    );
  }

  /** Resolve when the "listening on" line shows up; reject on exit/timeout. */
  async _waitListening(timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = LISTEN_RE.exec(this._log);
      if (m) {
        this.host = m[1] || m[2];
        this.port = Number(m[3]);
        if (this.host === "0.0.0.0") this.host = "127.0.0.1";
        if (this.host === "::") this.host = "::1";
        return;
      }
      if (this._spawnError) {
        throw new Error(
          `cannot start ${execdBin()}: ${this._spawnError.message}`,
        );
      }
      if (!this.running) {
        const { code, signal } = await this._exit;
        throw new Error(
          `execd exited with ${signal ?? code} at start:\n${this._log}`,
        );
      }
      if (Date.now() > deadline) {
        throw new Error(`execd did not start in ${timeoutMs} ms:\n${this._log}`);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /**
   * Send sig (SIGTERM) by pid and wait up to timeoutMs for the exit.
   * Resolves with { code, signal }; past the deadline the daemon is
   * SIGKILLed and the promise rejects.
   */
  async stop({ signal = "SIGTERM", timeoutMs = 15000 } = {}) {
    if (this.running) process.kill(this.pid, signal);
    let timer;
    const timeout = new Promise((resolve) => {
      timer = setTimeout(() => resolve(null), timeoutMs);
    });
    const st = await Promise.race([this._exit, timeout]);
    clearTimeout(timer);
    if (st === null) {
      try {
        process.kill(this.pid, "SIGKILL");
      } catch {
        // gone meanwhile
      }
      await this._exit;
      throw new Error(
        `execd did not stop within ${timeoutMs} ms:\n${this._log.slice(-3000)}`,
      );
    }
    return st;
  }
}

/**
 * Start a daemon.  opts.token adds --access-token; opts.args are extra
 * options; opts.env extra environment (EXECD_* variables of the caller's
 * environment are dropped, as the Python tests do).  Resolves with an
 * Execd handle once it listens.
 */
export async function startExecd(opts = {}) {
  const args = [...(opts.args ?? [])];
  if (opts.token !== undefined) args.push("--access-token", opts.token);
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith("EXECD_")) env[k] = v;
  }
  Object.assign(env, opts.env ?? {});
  if (
    !args.some((a) => a.startsWith("--listen") || a.startsWith("--port")) &&
    env.EXECD_LISTEN === undefined
  ) {
    args.push("--listen", "127.0.0.1:0");
  }
  const proc = spawn(execdBin(), args, {
    cwd: REPO_ROOT,
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  const d = new Execd(proc);
  d.token = opts.token;
  live.add(d);
  try {
    await d._waitListening(opts.startTimeoutMs ?? 10000);
  } catch (err) {
    if (d.running) await d.stop({ signal: "SIGKILL" }).catch(() => {});
    throw err;
  }
  return d;
}

/**
 * Register hooks for one daemon in the current file or describe block and
 * return a handle: handle.daemon (set once started) and
 * handle.connect(opts), which returns a connected SDK Sandbox (see
 * connectSandbox in sandbox.js) that is closed before the daemon stops.
 */
export function useExecd(opts = {}) {
  const sandboxes = [];
  const handle = {
    daemon: null,
    async connect(connectOpts = {}) {
      const sbx = await connectSandbox(handle.daemon, connectOpts);
      sandboxes.push(sbx);
      return sbx;
    },
  };
  before(async () => {
    handle.daemon = await startExecd(opts);
  });
  afterEach((t) => {
    if (t.passed === false && handle.daemon) {
      process.stderr.write(
        `--- execd log (pid ${handle.daemon.pid}) after "${t.name}" ---\n` +
          handle.daemon.log().slice(-4000),
      );
    }
  });
  after(async () => {
    for (const s of sandboxes.splice(0)) await s.close();
    if (!handle.daemon) return;
    const { code, signal } = await handle.daemon.stop();
    if (code !== 0) {
      throw new Error(
        `execd exited with ${signal ?? code}:\n` +
          handle.daemon.log().slice(-3000),
      );
    }
  });
  return handle;
}
