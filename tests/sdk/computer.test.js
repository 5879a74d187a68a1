// The computer-use API driving a real browser: Xvfb on a display it picks
// (-displayfd), execd with DISPLAY naming it, and Debian's Chromium
// launched headful on that display by playwright-core. A page served on
// loopback has a button, a long body and a box that follows the pointer
// while a button is held. The test clicks, scrolls and drags through
// POST /computer/mouse at screen positions (the page's offset on the
// screen is measured from a pointer move the API makes), and reads what
// happened back from the page through Playwright. Everything it starts,
// it stops by pid; every wait is bounded.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import { after, before, describe, it } from "node:test";

import { chromium } from "playwright-core";

import { useExecd } from "./lib/execd.js";

const TOKEN = "computer-test-token-5b1d";
const CHROMIUM = "/usr/bin/chromium";
const BOUND = 30_000;

const PAGE = `<!doctype html><html><head><style>
body { margin: 0; height: 5000px; background: #fff; }
#b { position: absolute; left: 200px; top: 120px; width: 160px;
  height: 60px; }
#box { position: absolute; left: 60px; top: 260px; width: 80px;
  height: 80px; background: #c33; touch-action: none; }
</style></head><body>
<button id="b">press me</button><div id="box"></div>
<script>
window.state = { clicks: 0, trusted: false, last: null, dragged: false };
const b = document.getElementById("b");
b.addEventListener("click", (e) => {
  state.clicks++; state.trusted = e.isTrusted; b.textContent = "pressed";
});
document.addEventListener("mousemove", (e) => {
  state.last = { cx: e.clientX, cy: e.clientY };
});
const box = document.getElementById("box");
let grab = null;
box.addEventListener("pointerdown", (e) => {
  grab = { x: e.clientX - box.offsetLeft, y: e.clientY - box.offsetTop };
  box.setPointerCapture(e.pointerId);
});
box.addEventListener("pointermove", (e) => {
  if (!grab) return;
  box.style.left = (e.clientX - grab.x) + "px";
  box.style.top = (e.clientY - grab.y) + "px";
});
box.addEventListener("pointerup", () => { grab = null; state.dragged = true; });
</script></body></html>`;

async function waitFor(pred, ms, what) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await pred()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function stop(p) {
  if (!p || p.exitCode !== null || p.signalCode !== null) return;
  const gone = new Promise((r) => p.once("exit", r));
  p.kill("SIGTERM");
  const t = setTimeout(() => p.kill("SIGKILL"), 10_000);
  return gone.then(() => clearTimeout(t));
}

describe("the computer-use API drives Chromium on an Xvfb display", () => {
  const env = {};
  let xvfb;
  let server;
  let url;
  let browser;
  let page;

  // Before execd starts (useExecd's hook comes next): DISPLAY for it.
  before(async () => {
    xvfb = spawn("Xvfb", ["-screen", "0", "1024x768x24", "-nolisten", "tcp",
      "-nolisten", "local", "-displayfd", "3"], {
      stdio: ["ignore", "ignore", "ignore", "pipe"],
    });
    const n = await new Promise((resolve, reject) => {
      let got = "";
      const t = setTimeout(() => reject(new Error("Xvfb did not start")),
        BOUND);
      xvfb.stdio[3].setEncoding("utf8");
      xvfb.stdio[3].on("data", (s) => {
        got += s;
        if (got.includes("\n")) {
          clearTimeout(t);
          resolve(got.trim());
        }
      });
      xvfb.once("exit", () => reject(new Error("Xvfb exited")));
    });
    env.DISPLAY = `:${n}`;
    await waitFor(() => fs.existsSync(`/tmp/.X11-unix/X${n}`), BOUND,
      "the X socket");
  });

  const execd = useExecd({ token: TOKEN, env });

  async function api(method, path, body) {
    const r = await fetch(`${execd.daemon.url}${path}`, {
      method,
      headers: { "Content-Type": "application/json",
        "X-EXECD-ACCESS-TOKEN": TOKEN },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    assert.equal(r.status, 200, `${method} ${path}: ${text}`);
    return text ? JSON.parse(text) : null;
  }

  // The page's client origin on the screen: where a pointer move lands.
  async function origin() {
    await page.evaluate(() => { window.state.last = null; });
    await api("POST", "/computer/mouse", { action: "move", x: 500, y: 400 });
    await api("POST", "/computer/mouse", { action: "move", x: 501, y: 401 });
    let last = null;
    await waitFor(async () => {
      last = await page.evaluate(() => window.state.last);
      return last && last.cx !== undefined;
    }, BOUND, "a mousemove in the page");
    return { x: 501 - last.cx, y: 401 - last.cy };
  }

  before(async () => {
    server = http.createServer((req, res) => {
      res.writeHead(200, { "Content-Type": "text/html" });
      res.end(PAGE);
    });
    await new Promise((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${server.address().port}/`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: false,
      env: { ...process.env, DISPLAY: env.DISPLAY },
      args: ["--no-sandbox", "--disable-gpu", "--no-first-run",
        "--window-position=0,0", "--window-size=1000,740",
        "--disable-smooth-scrolling",
        "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--disable-features=Translate"],
    });
    page = await browser.newPage({ viewport: null });
    await page.goto(url, { timeout: BOUND });
    await page.bringToFront();
  });

  after(async () => {
    if (browser) await browser.close();
    if (server) server.close();
    await stop(xvfb);
  });

  it("clicks the page's button at its screen position", async () => {
    const o = await origin();
    const r = await page.locator("#b").boundingBox();
    await api("POST", "/computer/mouse", { action: "click",
      x: Math.round(o.x + r.x + r.width / 2),
      y: Math.round(o.y + r.y + r.height / 2) });
    await page.waitForFunction(() => window.state.clicks === 1, null,
      { timeout: BOUND });
    const s = await page.evaluate(() => window.state);
    assert.equal(s.trusted, true);
    assert.equal(await page.textContent("#b"), "pressed");
    // A click beside the button changes nothing.
    await api("POST", "/computer/mouse", { action: "click",
      x: Math.round(o.x + r.x + r.width + 40), y: Math.round(o.y + r.y) });
    await new Promise((res) => setTimeout(res, 300));
    assert.equal(await page.evaluate(() => window.state.clicks), 1);
  });

  it("drags the box by the distance the pointer moved", async () => {
    const o = await origin();
    const before_ = await page.locator("#box").boundingBox();
    const x = Math.round(o.x + before_.x + 40);
    const y = Math.round(o.y + before_.y + 40);
    await api("POST", "/computer/mouse", { action: "drag", x, y,
      to_x: x + 150, to_y: y + 90 });
    await page.waitForFunction(() => window.state.dragged, null,
      { timeout: BOUND });
    const moved = await page.locator("#box").boundingBox();
    assert.ok(Math.abs(moved.x - before_.x - 150) <= 2, JSON.stringify(moved));
    assert.ok(Math.abs(moved.y - before_.y - 90) <= 2, JSON.stringify(moved));
  });

  it("scrolls the page down with the wheel, and back up", async () => {
    const o = await origin();
    assert.equal(await page.evaluate(() => window.scrollY), 0);
    await api("POST", "/computer/mouse", { action: "scroll",
      x: o.x + 600, y: o.y + 400, dy: 5 });
    await page.waitForFunction(() => window.scrollY > 100, null,
      { timeout: BOUND });
    // Settled: the same offset twice, 200 ms apart.
    let down = -1;
    await waitFor(async () => {
      const y = await page.evaluate(() => window.scrollY);
      const same = y === down;
      down = y;
      return same;
    }, BOUND, "the scroll to settle");
    await api("POST", "/computer/mouse", { action: "scroll",
      x: o.x + 600, y: o.y + 400, dy: -2 });
    await page.waitForFunction((d) => window.scrollY < d, down,
      { timeout: BOUND });
  });

  it("lists Chromium's window and takes a screenshot of the screen", async () => {
    const { windows } = await api("GET", "/computer/windows");
    assert.ok(windows.some((w) => /chromium/i.test(w.class)),
      JSON.stringify(windows));
    const r = await fetch(`${execd.daemon.url}/computer/screenshot` +
      "?scale_width=512", { headers: { "X-EXECD-ACCESS-TOKEN": TOKEN } });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("content-type"), "image/png");
    const png = Buffer.from(await r.arrayBuffer());
    assert.equal(png.readUInt32BE(16), 512);
    assert.equal(png.readUInt32BE(20), 384);
  });
});
