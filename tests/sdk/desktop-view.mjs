// The desktop viewer as a person opens it: headless Chromium (Debian's,
// driven by playwright-core) loads noVNC's vnc.html through execd's
// /proxy with the access token in the URL and no header, as a browser
// can; execd's 303 leaves a cookie for the port (HttpOnly, SameSite=
// Strict, Path=/proxy/PORT/) that the page, its scripts and the proxied
// websockify WebSocket then go with.  The page's screenshot is saved and
// checked for the desktop's own pixels (the root window colour the
// desktop image sets).
//
//   EXECD_URL=127.0.0.1:PORT EXECD_TOKEN=T VIEW_PORT=6080 \
//   VIEW_SHOT=out.png VIEW_RGB=2e6f8e node tests/sdk/desktop-view.mjs
//
// Prints one line (what it saw) and exits 0, or throws.  Every wait is
// bounded.
import assert from "node:assert/strict";
import fs from "node:fs";
import zlib from "node:zlib";

import { chromium } from "playwright-core";

const url = process.env.EXECD_URL;
const token = process.env.EXECD_TOKEN || "";
const port = process.env.VIEW_PORT || "6080";
const shot = process.env.VIEW_SHOT || "desktop-view.png";
const rgb = (process.env.VIEW_RGB || "2e6f8e").match(/../g)
  .map((h) => parseInt(h, 16));
const BOUND = 60_000;

// (width, height, pixel(x, y) -> [r, g, b]) of an 8-bit RGB or RGBA PNG.
function pngDecode(data) {
  assert.equal(data.subarray(0, 8).toString("latin1"), "\x89PNG\r\n\x1a\n");
  let pos = 8, w = 0, h = 0, ch = 0;
  const idat = [];
  while (pos < data.length) {
    const n = data.readUInt32BE(pos);
    const kind = data.subarray(pos + 4, pos + 8).toString("latin1");
    const body = data.subarray(pos + 8, pos + 8 + n);
    if (kind === "IHDR") {
      w = body.readUInt32BE(0);
      h = body.readUInt32BE(4);
      assert.equal(body[8], 8, "8-bit PNG");
      ch = { 2: 3, 6: 4 }[body[9]];
      assert.ok(ch, `colour type ${body[9]}`);
    } else if (kind === "IDAT") {
      idat.push(body);
    }
    pos += 12 + n;
  }
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = w * ch;
  const out = Buffer.alloc(h * stride);
  for (let y = 0; y < h; y++) {
    const f = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const a = i >= ch ? out[y * stride + i - ch] : 0;
      const b = y > 0 ? out[(y - 1) * stride + i] : 0;
      const c = i >= ch && y > 0 ? out[(y - 1) * stride + i - ch] : 0;
      let p = line[i];
      if (f === 1) p += a;
      else if (f === 2) p += b;
      else if (f === 3) p += (a + b) >> 1;
      else if (f === 4) {
        const q = a + b - c, pa = Math.abs(q - a), pb = Math.abs(q - b),
          pc = Math.abs(q - c);
        p += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      out[y * stride + i] = p & 255;
    }
  }
  return { w, h, px: (x, y) => [...out.subarray(y * stride + x * ch,
    y * stride + x * ch + 3)] };
}

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu"],
  timeout: BOUND,
});
try {
  // No header of any kind: only what a person types.
  const ctx = await browser.newContext({
    viewport: { width: 1400, height: 900 },
  });
  const page = await ctx.newPage();
  const plain = `http://${url}/proxy/${port}/vnc.html?autoconnect=true` +
    `&path=proxy/${port}/websockify&resize=off&reconnect=false`;
  const u = token ? `${plain}&token=${encodeURIComponent(token)}` : plain;
  const res = await page.goto(u, { timeout: BOUND });
  assert.equal(res.status(), 200, `vnc.html through the proxy: ${plain}`);
  if (token) {
    const from = res.request().redirectedFrom();
    assert.ok(from, "the ?token= load was redirected");
    assert.equal((await from.response()).status(), 303);
    assert.equal(page.url(), plain, "the token is gone from the URL");
    const jar = await ctx.cookies(`http://${url}/proxy/${port}/`);
    const c = jar.find((k) => k.name === "execd_proxy_token");
    assert.ok(c, `the proxy cookie is set: ${JSON.stringify(jar)}`);
    assert.equal(c.path, `/proxy/${port}/`);
    assert.equal(c.httpOnly, true);
    assert.equal(c.sameSite, "Strict");
    assert.equal(c.expires, -1, "a session cookie");
    assert.notEqual(c.value, token);
  }
  await page.waitForSelector("html.noVNC_connected", { timeout: BOUND });
  // Wait for a frame: the canvas is sized to the remote screen.
  await page.waitForFunction(() => {
    const c = document.querySelector("#noVNC_container canvas");
    return c && c.width >= 640;
  }, null, { timeout: BOUND });
  const size = await page.evaluate(() => {
    const c = document.querySelector("#noVNC_container canvas");
    return [c.width, c.height];
  });
  // Frames arrive after the connect: poll the screenshot for the colour.
  let found = 0, total = 0, png;
  const end = Date.now() + BOUND;
  for (;;) {
    png = await page.screenshot({ path: shot });
    const img = pngDecode(png);
    found = 0;
    total = 0;
    for (let y = 0; y < img.h; y += 4) {
      for (let x = 0; x < img.w; x += 4) {
        const p = img.px(x, y);
        total++;
        if (p.every((v, i) => Math.abs(v - rgb[i]) <= 6)) found++;
      }
    }
    if (found / total > 0.2 || Date.now() > end) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  assert.ok(found / total > 0.2, `the desktop's colour #${process.env
    .VIEW_RGB || "2e6f8e"} covers ${found} of ${total} sampled pixels ` +
    `of the viewer's screenshot (${shot})`);
  console.log(`connected, remote screen ${size[0]}x${size[1]}, desktop ` +
    `colour in ${Math.round((100 * found) / total)}% of the page`);
} finally {
  await browser.close();
}
