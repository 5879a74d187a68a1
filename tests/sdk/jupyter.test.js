// The Jupyter Server API that execd serves, driven by JupyterLab's own
// client library, @jupyterlab/services (pinned in package.json), over
// Node's fetch and the `ws` package: kernelspecs, a kernel started,
// executed in with streamed output, a display_data image, interrupted,
// restarted and shut down; two KernelConnections on one kernel both see
// iopub; SessionManager create, list and shut down.  Every wait is
// bounded by the test timeout.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";

import {
  KernelManager,
  KernelSpecManager,
  ServerConnection,
  SessionManager,
} from "@jupyterlab/services";
import WebSocket from "ws";

import { useExecd } from "./lib/execd.js";

const TOKEN = "jupyter-test-token-51d7";
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9Q" +
  "DwADhgGAWjR9awAAAABJRU5ErkJggg==";

function settings(d) {
  return ServerConnection.makeSettings({
    baseUrl: d.url + "/",
    wsUrl: d.url.replace(/^http/, "ws") + "/",
    token: TOKEN,
    appendToken: true,
    WebSocket,
  });
}

/** Run code; every iopub message of it, once its reply is in. */
async function run(kernel, code) {
  const seen = [];
  const future = kernel.requestExecute({ code, stop_on_error: false });
  future.onIOPub = (msg) => seen.push(msg);
  const reply = await future.done;
  return { reply, seen, text: streams(seen) };
}

function streams(msgs) {
  return msgs.filter((m) => m.header.msg_type === "stream")
    .map((m) => m.content.text).join("");
}

describe("@jupyterlab/services against execd", () => {
  const execd = useExecd({ token: TOKEN });

  it("kernelspecs, execute, display, interrupt, restart, shutdown",
    async () => {
      const serverSettings = settings(execd.daemon);
      const specs = new KernelSpecManager({ serverSettings });
      await specs.ready;
      assert.equal(specs.specs.default, "python3");
      assert.equal(specs.specs.kernelspecs.python3.language, "python");

      const kernels = new KernelManager({ serverSettings });
      await kernels.ready;
      const kernel = await kernels.startNew({ name: "python3" });
      try {
        const info = await kernel.info;
        assert.equal(info.language_info.name, "python");

        // Streamed: the first line arrives before the sleep is over.
        let first = null;
        const t0 = Date.now();
        const future = kernel.requestExecute({
          code: "import time\nprint('one', flush=True)\ntime.sleep(1)\n" +
            "print('two')" });
        future.onIOPub = (m) => {
          if (m.header.msg_type === "stream" && first === null) {
            first = Date.now() - t0;
          }
        };
        const done = await future.done;
        assert.equal(done.content.status, "ok");
        assert.ok(first !== null && first < Date.now() - t0,
          "no output before the end");

        const img = await run(kernel,
          "from IPython.display import display, Image\nimport base64\n" +
          `display(Image(data=base64.b64decode('${PNG}')))`);
        const dd = img.seen.find((m) => m.header.msg_type === "display_data");
        assert.ok(dd, "no display_data");
        assert.ok(Buffer.from(dd.content.data["image/png"], "base64")
          .subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47])));

        await run(kernel, "x = 41");
        const sleeping = kernel.requestExecute({
          code: "import time; time.sleep(300)", stop_on_error: false });
        await new Promise((resolve) => {
          sleeping.onIOPub = (m) => {
            if (m.header.msg_type === "execute_input") resolve();
          };
        });
        await new Promise((r) => setTimeout(r, 300));
        await kernel.interrupt();
        const intr = await sleeping.done.catch((e) => e);
        const content = intr.content ?? intr;
        assert.equal(content.ename, "KeyboardInterrupt");
        assert.equal((await run(kernel, "print(x + 1)")).text, "42\n");

        await kernel.restart();
        const after = await run(kernel, "print('x' in dir())");
        assert.equal(after.text, "False\n");
      } finally {
        await kernel.shutdown();
        kernel.dispose();
      }
      const left = await fetch(`${execd.daemon.url}/api/kernels`, {
        headers: { Authorization: `token ${TOKEN}` } });
      assert.deepEqual(await left.json(), []);
      kernels.dispose();
      specs.dispose();
    });

  it("two KernelConnections on one kernel both see iopub", async () => {
    const serverSettings = settings(execd.daemon);
    const kernels = new KernelManager({ serverSettings });
    await kernels.ready;
    const a = await kernels.startNew({ name: "python3" });
    const b = kernels.connectTo({ model: a.model });
    try {
      await b.info;
      const seenByB = [];
      b.iopubMessage.connect((_, m) => seenByB.push(m));
      const r = await run(a, "print('to everyone')");
      assert.equal(r.text, "to everyone\n");
      for (let i = 0; i < 100 && !streams(seenByB).includes("to everyone");
        i++) {
        await new Promise((res) => setTimeout(res, 50));
      }
      assert.equal(streams(seenByB), "to everyone\n");
    } finally {
      b.dispose();
      await a.shutdown();
      a.dispose();
      kernels.dispose();
    }
  });

  it("SessionManager: create, list, shut down", async () => {
    const serverSettings = settings(execd.daemon);
    const kernels = new KernelManager({ serverSettings });
    const sessions = new SessionManager({ serverSettings,
      kernelManager: kernels });
    await sessions.ready;
    const s = await sessions.startNew({ path: "work/a.ipynb", name: "a",
      type: "notebook", kernel: { name: "python3" } });
    try {
      assert.equal(s.path, "work/a.ipynb");
      const r = await run(s.kernel, "print(6 * 7)");
      assert.equal(r.text, "42\n");
      await sessions.refreshRunning();
      const listed = [...sessions.running()].map((m) => m.id);
      assert.deepEqual(listed, [s.id]);
    } finally {
      await s.shutdown();
      s.dispose();
    }
    await sessions.refreshRunning();
    assert.deepEqual([...sessions.running()], []);
    sessions.dispose();
    kernels.dispose();
  });
});

// @jupyterlab/services leaves a timer of a minute behind its disposed
// connections; once everything here has ended, this file's process need
// not wait for it (the timer below does not itself keep it alive).
after(() => {
  setTimeout(() => process.exit(process.exitCode ?? 0), 2000).unref();
});
