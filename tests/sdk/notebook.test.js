// A notebook in a real browser on execd's kernel: Debian's classic
// Notebook server (python3-notebook) runs in Jupyter's gateway mode with
// --gateway-url at execd's Jupyter listener, headless Chromium (Debian's
// chromium, driven by playwright-core, pinned in package.json) opens a
// notebook page there, runs a cell that prints and draws a plot (a PNG
// made by the cell, with no plotting library), and the output cell shows
// both.  The page's kernel is one of execd's contexts: the agent's
// POST /code in it sees what the cell left.  A screenshot is saved under
// build/test-artifacts/.  Every wait is bounded; what the test starts, it
// stops by pid.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import { chromium } from "playwright-core";

import { REPO_ROOT, useExecd } from "./lib/execd.js";

const TOKEN = "notebook-test-token-7a21";
const NB_TOKEN = "notebook-page-token-3c9e";
const CHROMIUM = "/usr/bin/chromium";
const BOUND = 60_000;

// The cell: a line of text and a sine curve drawn into a PNG by hand.
const CELL = [
  "import math, struct, zlib",
  "from IPython.display import Image, display",
  "w, h = 240, 120",
  "rows = []",
  "for y in range(h):",
  "    row = bytearray([0])",
  "    for x in range(w):",
  "        c = h / 2 - (h / 2 - 8) * math.sin(x / w * 4 * math.pi)",
  "        row += bytes([30, 90, 200] if abs(y - c) < 2 else [255] * 3)",
  "    rows.append(bytes(row))",
  "def chunk(t, d):",
  "    return (struct.pack('>I', len(d)) + t + d +",
  "            struct.pack('>I', zlib.crc32(t + d)))",
  "png = (b'\\x89PNG\\r\\n\\x1a\\n' +",
  "       chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) +",
  "       chunk(b'IDAT', zlib.compress(b''.join(rows))) +",
  "       chunk(b'IEND', b''))",
  "answer = 6 * 7",
  "print('hello from the notebook', answer)",
  "display(Image(data=png))",
].join("\n");

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitFor(pred, ms, what) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await pred()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("a notebook in Chromium, through Jupyter's gateway mode", () => {
  const execd = useExecd({
    token: TOKEN,
    args: ["--jupyter-listen", "127.0.0.1:0"],
  });
  let dir;
  let nb;
  let nbLog = "";
  let nbPort;
  let browser;

  before(async () => {
    // The Jupyter listener's line follows the main one's, which is all
    // useExecd waits for.
    const re = /Jupyter Server API listening on 127\.0\.0\.1:(\d+)/;
    await waitFor(async () => re.test(execd.daemon.log()), 10000,
      "the Jupyter Server API's listening line");
    const m = execd.daemon.log().match(re);
    assert.ok(m, execd.daemon.log());
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "execd-nb-"));
    fs.writeFileSync(path.join(dir, "agent.ipynb"), JSON.stringify({
      cells: [{ cell_type: "code", execution_count: null, metadata: {},
        outputs: [], source: CELL }],
      metadata: { kernelspec: { name: "python3", language: "python",
        display_name: "Python 3" } },
      nbformat: 4, nbformat_minor: 5,
    }));
    nbPort = await freePort();
    nb = spawn("/usr/bin/python3", ["-m", "notebook", "--no-browser",
      "--allow-root", "--ip=127.0.0.1", `--port=${nbPort}`,
      "--port-retries=0", `--NotebookApp.token=${NB_TOKEN}`,
      `--notebook-dir=${dir}`, `--gateway-url=http://127.0.0.1:${m[1]}`,
      `--GatewayClient.auth_token=${TOKEN}`,
      `--GatewayClient.request_timeout=${BOUND / 1000}`], {
      env: { ...process.env, HOME: dir, JUPYTER_CONFIG_DIR: `${dir}/.cfg`,
        JUPYTER_DATA_DIR: `${dir}/.data`,
        JUPYTER_RUNTIME_DIR: `${dir}/.run` },
      stdio: ["ignore", "pipe", "pipe"],
    });
    for (const s of [nb.stdout, nb.stderr]) {
      s.setEncoding("utf8");
      s.on("data", (t) => { nbLog = (nbLog + t).slice(-16384); });
    }
    await waitFor(async () => {
      if (nb.exitCode !== null) throw new Error(`notebook exited:\n${nbLog}`);
      try {
        const r = await fetch(`http://127.0.0.1:${nbPort}/api/kernelspecs` +
          `?token=${NB_TOKEN}`);
        return r.ok;
      } catch {
        return false;
      }
    }, BOUND, "the notebook server");
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"],
    });
  });

  after(async () => {
    if (browser) await browser.close();
    if (nb && nb.exitCode === null) {
      const gone = new Promise((r) => nb.once("exit", r));
      nb.kill("SIGTERM");
      const t = setTimeout(() => nb.kill("SIGKILL"), 15_000);
      await gone;
      clearTimeout(t);
    }
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("runs a cell that prints and plots, on one of execd's kernels", async (t) => {
    const page = await browser.newPage({ viewport: { width: 1100, height: 700 } });
    try {
      await page.goto(`http://127.0.0.1:${nbPort}/notebooks/agent.ipynb` +
        `?token=${NB_TOKEN}`, { timeout: BOUND });
      // Connected: the kernel answered kernel_info through the gateway.
      await page.waitForFunction(() => window.Jupyter?.notebook?.kernel
        ?.is_connected() && Jupyter.notebook.kernel.info_reply?.status === "ok",
        null, { timeout: BOUND });
      const kid = await page.evaluate(() => Jupyter.notebook.kernel.id);
      await page.click("#notebook-container .cell .input_area");
      await page.keyboard.press("Shift+Enter");
      const img = await page.waitForSelector(".output_area img",
        { timeout: BOUND });
      const text = await page.textContent(".output_subarea.output_stream");
      assert.equal(text, "hello from the notebook 42\n");
      // The plot rendered: the browser decoded the cell's 240x120 PNG.
      await page.waitForFunction((el) => el.complete, img, { timeout: BOUND });
      assert.deepEqual(await img.evaluate((el) => [el.naturalWidth,
        el.naturalHeight]), [240, 120]);
      const shots = path.join(REPO_ROOT, "build", "test-artifacts");
      fs.mkdirSync(shots, { recursive: true });
      await page.screenshot({ path: path.join(shots, "notebook.png") });

      // The same kernel is an execd context: the agent sees the cell's state.
      const r = await fetch(`${execd.daemon.url}/code`, {
        method: "POST",
        headers: { "Content-Type": "application/json",
          "X-EXECD-ACCESS-TOKEN": TOKEN },
        body: JSON.stringify({ code: "print('agent sees', answer)",
          context: { id: kid } }),
      });
      const body = await r.text();
      assert.equal(r.status, 200, body);
      assert.match(body, /agent sees 42/);
    } catch (e) {
      t.diagnostic(`notebook server log:\n${nbLog}`);
      throw e;
    } finally {
      await page.close();
    }
  });
});
