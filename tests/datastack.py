"""A data task inside the code-interpreter image, through execd's API, for
tests/docker.sh: a page served on the container's loopback, whose table
a script of the page draws, is scraped by Chromium driven from Node
(playwright-core) into a CSV; a Python context reads the CSV with pandas,
fits a line with numpy and plots it with matplotlib, whose PNG must arrive
in the run's events; a JavaScript context finds playwright-core; the data
libraries import; Selenium (the Python way
to drive Chromium) reads the same page.

    /usr/bin/python3 tests/datastack.py EXECD_PORT PAGE_PORT

The container shares the host's network (tests/docker.sh), so execd and
the page are both on 127.0.0.1.  Prints one "ok: ..." line per step;
exits non-zero with the reason at the first failure.
"""
import base64
import http.client
import json
import random
import sys

EXECD = int(sys.argv[1])
PAGE = int(sys.argv[2])
DIR = "/tmp/datastack"
URL = f"http://127.0.0.1:{PAGE}/index.html"


def post(path, body, timeout=300):
    """POST a JSON body; the stream's events (one JSON object a line)."""
    c = http.client.HTTPConnection("127.0.0.1", EXECD, timeout=timeout)
    c.request("POST", path, body=json.dumps(body),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status != 200:
        sys.exit(f"{path}: HTTP {r.status}: {data[:500]!r}")
    return [json.loads(x) for x in data.split(b"\n") if x.strip()]


def text(evs, kind):
    return "".join(e.get("text", "") for e in evs if e["type"] == kind)


def no_error(what, evs):
    errs = [e for e in evs if e["type"] == "error"]
    if errs:
        sys.exit(f"{what}: error event {json.dumps(errs[0])[:2000]}\n"
                 f"stdout: {text(evs, 'stdout')[-2000:]}\n"
                 f"stderr: {text(evs, 'stderr')[-2000:]}")


def command(what, cmd, background=False):
    evs = post("/command", {"command": cmd, "background": background})
    no_error(what, evs)
    return evs


def code(what, src):
    evs = post("/code", {"code": src, "context": {"language": "python"}})
    no_error(what, evs)
    return evs


def ok(msg):
    print(f"ok: {msg}", flush=True)


# The page: the rows are in a script, which draws the table, so only a
# browser sees them.  y = 2.5 x - 1 and a little noise.
rng = random.Random(7)
rows = [(x, round(2.5 * x - 1 + rng.uniform(-0.2, 0.2), 3))
        for x in range(40)]
page = f"""<!doctype html>
<html><head><title>datastack</title></head><body>
<table id="data"><tr><th>x</th><th>y</th></tr></table>
<script>
for (const [x, y] of {json.dumps(rows)}) {{
  const tr = document.createElement("tr");
  for (const v of [x, y]) {{
    const td = document.createElement("td");
    td.textContent = String(v);
    tr.appendChild(td);
  }}
  document.getElementById("data").appendChild(tr);
}}
</script></body></html>
"""
scrape = """const { chromium } = require("playwright-core");
(async () => {
  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--disable-dev-shm-usage"],
  });
  const page = await browser.newPage();
  await page.goto(process.argv[2]);
  const rows = await page.$$eval("#data tr", (trs) =>
    trs.map((tr) => [...tr.children].map((c) => c.textContent.trim())));
  require("fs").writeFileSync(process.argv[3],
    rows.map((r) => r.join(",")).join("\\n") + "\\n");
  await browser.close();
  console.log(`scraped ${rows.length - 1} rows`);
})().catch((e) => { console.error(e); process.exit(1); });
"""


def heredoc(path, body):
    return f"cat > {path} <<'DATASTACK_EOF'\n{body}DATASTACK_EOF\n"


command("write the page and the script",
        f"rm -rf {DIR} && mkdir -p {DIR}/site && "
        + heredoc(f"{DIR}/site/index.html", page)
        + heredoc(f"{DIR}/scrape.js", scrape))
command("serve the page",
        f"exec python3 -m http.server --bind 127.0.0.1 "
        f"--directory {DIR}/site {PAGE}", background=True)
# Wait (bounded) until the server answers, from inside the container.
command("wait for the page",
        f"for i in $(seq 100); do python3 -c 'import urllib.request; "
        f"urllib.request.urlopen(\"{URL}\", timeout=2)' 2>/dev/null "
        f"&& exit 0; sleep 0.2; done; echo page not served >&2; exit 1")
ok("page served on the container's loopback")

# Node from another directory than /opt/browser: /node_modules finds it.
evs = command("scrape with playwright-core",
              f"cd {DIR} && node scrape.js {URL} {DIR}/data.csv")
out = text(evs, "stdout")
if f"scraped {len(rows)} rows" not in out:
    sys.exit(f"scrape: stdout {out!r}, stderr {text(evs, 'stderr')!r}")
ok(f"playwright-core + Chromium: {out.strip()}")

# The JavaScript kernel finds it too (its TypeScript compiler included).
evs = post("/code", {"code": 'console.log(require("playwright-core")'
                     '.chromium.name())',
                     "context": {"language": "javascript"}})
no_error("playwright-core from a javascript context", evs)
if text(evs, "stdout").strip() != "chromium":
    sys.exit(f"javascript context: {json.dumps(evs)[:2000]}")
ok("playwright-core from a javascript context")

evs = code("fit and plot", f"""
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
df = pd.read_csv("{DIR}/data.csv")
a, b = np.polyfit(df["x"], df["y"], 1)
print(f"n={{len(df)}} slope={{a:.3f}} intercept={{b:.3f}}")
fig, ax = plt.subplots()
ax.plot(df["x"], df["y"], "o", label="scraped")
ax.plot(df["x"], a * df["x"] + b, label="fit")
ax.legend()
""")
out = text(evs, "stdout")
try:
    kv = dict(f.split("=") for f in out.split())
    n, slope, icept = int(kv["n"]), float(kv["slope"]), float(kv["intercept"])
except (ValueError, KeyError):
    sys.exit(f"fit: stdout {out!r}")
if n != len(rows) or abs(slope - 2.5) > 0.05 or abs(icept + 1) > 0.5:
    sys.exit(f"fit: {out!r}, wanted n={len(rows)} slope~2.5 intercept~-1")
ok(f"pandas + numpy: {out.strip()}")
pngs = [base64.b64decode(e["results"]["image/png"]) for e in evs
        if e["type"] == "result" and "image/png" in e.get("results", {})]
if not pngs:
    sys.exit(f"plot: no image/png in {[e['type'] for e in evs]}: "
             f"{json.dumps(evs)[:2000]}")
if not pngs[0].startswith(b"\x89PNG\r\n\x1a\n"):
    sys.exit(f"plot: not a PNG: {pngs[0][:16]!r}")
ok(f"matplotlib: a {len(pngs[0])}-byte PNG in the stream")

evs = code("imports", "import sklearn, scipy, sympy, openpyxl, bs4, lxml, "
           "PIL, requests\nprint('imported', sklearn.__version__)")
if "imported" not in text(evs, "stdout"):
    sys.exit(f"imports: {json.dumps(evs)[:2000]}")
ok("sklearn, scipy, sympy, openpyxl, bs4, lxml, PIL, requests import")

evs = code("selenium", f"""
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
opts = webdriver.ChromeOptions()
opts.binary_location = "/usr/bin/chromium"
for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
    opts.add_argument(a)
drv = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
try:
    drv.get("{URL}")
    print("selenium rows", len(drv.find_elements(By.CSS_SELECTOR, "#data tr")) - 1)
finally:
    drv.quit()
""")
out = text(evs, "stdout")
if f"selenium rows {len(rows)}" not in out:
    sys.exit(f"selenium: stdout {out!r}, stderr {text(evs, 'stderr')!r}")
ok(f"Selenium + chromedriver: {out.strip()}")
