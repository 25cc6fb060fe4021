"""The rendered report in a real browser: headless Chromium (Debian package ``chromium``)
loads it without console errors or network requests, decodes every image, and takes a
1280 px wide screenshot. Skipped when no Chromium is installed."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kernellab.report import render
from kernellab.report.browser import check_page, find_chromium, screenshot

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "results"

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    find_chromium() is None,
    reason="no Chromium: install the Debian package 'chromium' (/usr/bin/chromium) to run the browser checks",
)]


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("browser")
    return render(FIXTURE, "fake-gpu", out, others=[FIXTURE / "cpu-x86_64"])["report.html"]


def test_report_loads_cleanly(page):
    result = check_page(page)
    assert result["console_errors"] == []
    assert result["broken_images"] == []
    assert result["external_requests"] == []
    assert result["images"] == page.read_text(encoding="utf-8").count("<img") == 13  # with the timeline figure


@pytest.mark.parametrize("width", [360, 768])
def test_phone_and_tablet_widths_do_not_scroll_sideways(page, width):
    """Wide tables and code scroll inside their own boxes; the page itself fits the window."""
    result = check_page(page, width=width)
    assert result["console_errors"] == [] and result["broken_images"] == []
    assert 0 < result["scroll_width"] <= width


def test_screenshot_1280(page, tmp_path):
    png = screenshot(page, tmp_path / "report.png", width=1280)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width == 1280 and height > 2000


def test_checker_sees_problems(tmp_path):
    """The checks can fail: an error, a broken image and an external fetch are all reported."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<!DOCTYPE html><html><body>"
        "<img alt='broken' src='data:image/png;base64,AAAA'>"
        "<img alt='remote' src='http://example.invalid/x.png'>"
        "<script>console.error('boom'); undefined_function();</script>"
        "</body></html>",
        encoding="utf-8",
    )
    result = check_page(bad)
    errors = " ".join(result["console_errors"])
    assert "boom" in errors and "undefined_function" in errors
    assert len(result["broken_images"]) == 2
    assert result["external_requests"] == ["http://example.invalid/x.png"]


def test_checker_sees_a_page_wider_than_the_window(tmp_path):
    wide = tmp_path / "wide.html"
    wide.write_text("<!DOCTYPE html><html><body><div style='width:900px'>x</div></body></html>", encoding="utf-8")
    assert check_page(wide, width=360)["scroll_width"] >= 900


def test_the_readme_screenshot_is_made_by_the_report_command(tmp_path):
    """``python -m kernellab.report <set> --screenshot PNG``, as the README's picture is made."""
    import shutil

    from kernellab.report.__main__ import SCREENSHOT_HEIGHT, main

    shutil.copytree(FIXTURE / "cpu-x86_64", tmp_path / "cpu-x86_64")
    png = tmp_path / "shot.png"
    assert main([str(tmp_path / "cpu-x86_64"), "--references", "", "--screenshot", str(png)]) == 0
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (1280, SCREENSHOT_HEIGHT)
