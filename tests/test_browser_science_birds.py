"""The science-birds HTML report opened in headless Chromium: the embedded level images render.

Skipped cleanly when no Chromium binary is installed (``.ci/run`` installs it when it can).
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.test_science_birds import pixel_classifier  # noqa: F401 - fixture
from worldforge.evaluation.science_birds import evaluate
from worldforge.forge import WorldForge

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")


def _chromium() -> str | None:
    for name in CHROMIUM_CANDIDATES:
        path = shutil.which(name) if not os.path.isabs(name) else (name if os.path.exists(name) else None)
        if path:
            return path
    return None


CHROMIUM = _chromium()
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed"),
]


def _screenshot(html_file: Path, out: Path, height: int) -> None:
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--window-size=1200,{height}",
                f"--screenshot={out}",
                html_file.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )


def _dark_pixels(png: Path) -> int:
    from PIL import Image

    with Image.open(png) as img:
        gray = img.convert("L")
        return sum(gray.histogram()[:60])


def test_html_report_renders_level_images(tmp_path: Path, pixel_classifier: None) -> None:  # noqa: F811
    options = {"characters": "A-C", "trials": 3, "progress": False, "workers": 1}
    report = evaluate(["mock"], forge=WorldForge(), options=options)
    page = report.to_html()
    assert page.count("<img ") >= 18
    with_images = tmp_path / "report.html"
    with_images.write_text(page, encoding="utf-8")
    # the same page with every image source blanked: the difference is what the images drew
    blank = tmp_path / "blank.html"
    blank.write_text(re.sub(r'src="data:image/png;base64,[^"]*"', 'src=""', page), encoding="utf-8")
    height = 9000
    shot, shot_blank = tmp_path / "report.png", tmp_path / "blank.png"
    _screenshot(with_images, shot, height)
    _screenshot(blank, shot_blank, height)
    from PIL import Image

    with Image.open(shot) as img:
        assert img.size == (1200, height)
        buf = io.BytesIO()
        img.save(buf, format="PNG")
    dark, dark_blank = _dark_pixels(shot), _dark_pixels(shot_blank)
    # 18+ level thumbnails of black blocks: thousands of extra dark pixels once images render
    assert dark - dark_blank > 18 * 100, (dark, dark_blank)
