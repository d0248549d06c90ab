"""The report in a real browser, offline: headless chromium opens `tracekit report`'s page in a frame
of tests/browser/report_check.html, which writes down the verdict it shows and the drawn size of
every inline chart. Needs Debian's chromium (.ci/run installs it); skipped where it is missing,
except under .ci/run (TRACEKIT_BROWSER_TESTS=required), where a missing browser fails."""

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading

import matplotlib.image as mpimg
import pytest
from click.testing import CliRunner

from tests.conftest import ROOT, SAMPLES
from tracekit import verdict
from tracekit.cli import _load_run, main

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--virtual-time-budget=15000"]

if not CHROMIUM and os.environ.get("TRACEKIT_BROWSER_TESTS") == "required":
    raise RuntimeError("chromium is missing but .ci/run requires the browser tests (apt-get install chromium)")
pytestmark = [pytest.mark.skipif(not CHROMIUM, reason="chromium is missing (apt-get install chromium)"),
              pytest.mark.xdist_group("browser")]  # one chromium at a time: see tests/test_trace_browser.py


def chromium(*args):
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=120).stdout


@pytest.mark.parametrize("sample, charts", [("swift_2x2_wandb", 2), ("gpu_2x1_divergence", 2)])
def test_the_report_renders_its_verdict_and_every_chart(tmp_path, sample, charts):
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(ROOT / "tests/browser/report_check.html", site / "check.html")
    r = CliRunner().invoke(main, ["report", str(SAMPLES / sample), "-o", str(site / "report.html")])
    assert r.exit_code == 0, r.output
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a: None
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as httpd:
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{httpd.server_address[1]}"
        dom = chromium("--dump-dom", f"{base}/check.html")
        chromium("--window-size=1280,2400", f"--screenshot={tmp_path / 'report.png'}", f"{base}/report.html")
        httpd.shutdown()
    m = re.search(r'<pre id="tk-result">([^<]*)</pre>', dom)
    assert m, "the page did not load in the browser"
    seen = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    v = verdict.decide(_load_run(str(SAMPLES / sample)))
    assert seen["verdict"] == f"{v.to_dict()['kind'].upper()}: {v.summary}"
    assert len(seen["charts"]) == charts
    assert all(c["width"] > 400 and c["height"] > 150 and c["drawn"] > 20 for c in seen["charts"]), seen["charts"]
    img = mpimg.imread(tmp_path / "report.png")
    assert img.shape[:2] == (2400, 1280) and img[..., :3].std() > 0.05  # a drawn page, not a blank one
