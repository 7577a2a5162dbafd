"""The HTML report opened in a real headless Chromium: it renders, is not blank, and hostile logs stay inert."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from doctor.report.outputs import render
from tests.conftest import need
from tests.report_sample import PLANTED, full_report

pytestmark = pytest.mark.chromium

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars"]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def run_chromium(*args: str) -> subprocess.CompletedProcess[str]:
    browser = chromium()
    need(browser is not None, "headless Chromium (Debian package 'chromium')")
    with tempfile.TemporaryDirectory(prefix="qd-chromium-") as profile:
        return subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              text=True, timeout=120)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(render(full_report(), "html"), encoding="utf-8")
    return path


def test_screenshot_is_not_blank(page: Path, tmp_path: Path):
    from PIL import Image

    shot = tmp_path / "report.png"
    done = run_chromium(f"--screenshot={shot}", "--window-size=1200,1800", page.as_uri())
    assert shot.is_file(), done.stderr[-2000:]
    with Image.open(shot) as image:
        assert image.size == (1200, 1800)
        rgb = image.convert("RGB")
        colours = rgb.getcolors(maxcolors=1 << 20) or []
        banner = rgb.getpixel((600, 10))
    assert len(colours) > 200, "a rendered report has text, badges and a chart, not a flat page"
    assert banner == (0x6B, 0x46, 0xC1), "the summary banner has the colour of the worst status (a crashed check)"


def test_dom_has_the_summary_and_no_script_ran(page: Path):
    done = run_chromium("--dump-dom", page.as_uri())
    dom = done.stdout
    assert "4 problems found" in dom, done.stderr[-2000:]
    assert "Issues in 3 categories." in dom
    assert "QD-HOST-001" in dom and "docker run --ipc=host" in dom
    assert "<title>qwen-doctor error: deploy --profile vllm-stable" in dom, "the planted script did not run"
    assert "<script" not in dom
    assert "&lt;script&gt;document.title=" in dom
    assert [s for s in PLANTED if s in dom] == []


def test_the_check_report_of_the_h200_bundle_renders(tmp_path: Path):
    from tests.conftest import FIXTURES
    from tests.test_cli_check import qd

    page = tmp_path / "r.html"
    done = qd("check", "--from", str(FIXTURES / "h200.json"), "--output", str(page))
    assert done.returncode == 1, done.stderr
    dom = run_chromium("--dump-dom", page.as_uri()).stdout
    assert "3 problems found" in dom and "QD-HOST-003" in dom and "NVIDIA H200" in dom
