"""The science-birds HTML report opened in headless Chromium, as a person would open it.

The embedded level images render and decode, the charts are there with one mark per program /
letter x program / model, and the page never scrolls sideways at phone (375 px) or desktop
(1280 px) width. Layout is measured by the browser itself: a host page frames the report at the
exact width and its script writes the measurements into the DOM, which ``--dump-dom`` prints.

Skipped cleanly when no Chromium binary is installed (``.ci/run`` installs it when it can).
"""

from __future__ import annotations

import html
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.suites.test_science_birds import pixel_classifier  # noqa: F401 - fixture
from worldforge.forge import WorldForge
from worldforge.suites.science_birds.suite import evaluate

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


def _chromium_run(html_file: Path, width: int, height: int, *action: str) -> str:
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
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
                f"--window-size={width},{height}",
                *action,
                html_file.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    return done.stdout.decode("utf-8", "replace")


def _screenshot(html_file: Path, out: Path, height: int, width: int = 1200) -> None:
    _chromium_run(html_file, width, height, f"--screenshot={out}")


#: Headless Chromium will not make a window narrower than 500 px, so the page is measured and
#: photographed inside an iframe of the exact width: the frame is the page's viewport (its media
#: queries and ``innerWidth`` are the frame's). The page goes in as ``srcdoc``, so the frame shares
#: the host's origin and the host's script can measure it directly once everything has loaded
#: (the page itself stays unchanged and script-free). The heatmap's previews are SVG ``<image>``
#: elements, which have no ``naturalWidth``: the host loads each preview source as an ``<img>``.
HOST = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="page" width="{width}" height="{height}" style="border:0;display:block" srcdoc="{page}"></iframe>
<div id="previews" hidden>{previews}</div><pre id="measure"></pre>
<script>
window.addEventListener("load", function () {{
  var win = document.getElementById("page").contentWindow, doc = win.document, vw = win.innerWidth;
  var all = function (q, d) {{ return Array.prototype.slice.call((d || doc).querySelectorAll(q)); }};
  var decoded = function (img) {{ return img.complete && img.naturalWidth > 0; }};
  var imgs = all("img"), previews = all("#previews img", document);
  var out = {{
    innerWidth: vw,
    bodyScrollWidth: doc.body.scrollWidth,
    pageScrollWidth: doc.documentElement.scrollWidth,
    fits: doc.body.scrollWidth <= vw && doc.documentElement.scrollWidth <= vw,
    wide: all("body *").filter(function (el) {{
      return !el.closest(".scroll") && el.getBoundingClientRect().right > vw + 0.5;
    }}).map(function (el) {{ return el.tagName + "." + (el.getAttribute("class") || ""); }}).slice(0, 10),
    images: imgs.length,
    previews: previews.length,
    decoded: imgs.concat(previews).filter(decoded).length,
    naturalWidths: imgs.map(function (i) {{ return i.naturalWidth; }}),
    charts: all("svg.chart").length,
    bars: all("svg g.bar").length,
    baselineBars: all('svg g.bar[data-kind="baseline"]').length,
    cells: all("svg g.hm").length,
    segments: all("svg rect.segment").length,
    errorBars: all("svg g.bar g.errorbar").length,
    errorBarsInside: all("svg g.bar g.errorbar line").every(function (el) {{
      var box = el.getBoundingClientRect(), chart = el.closest("svg").getBoundingClientRect();
      return box.width + box.height > 0 && box.left >= chart.left - 0.5 && box.right <= chart.right + 0.5;
    }}),
    chartsFit: all("svg.chart").every(function (el) {{
      return el.getBoundingClientRect().right <= vw + 0.5;
    }})
  }};
  document.getElementById("measure").textContent = JSON.stringify(out);
}});
</script></body></html>"""


def _host(tmp_path: Path, page: str, width: int, height: int) -> Path:
    sources = re.findall(r'<image href="(data:image/png;base64,[^"]*)"', page)
    host = tmp_path / f"host-{width}-{height}.html"
    host.write_text(
        HOST.format(
            page=html.escape(page, quote=True),
            width=width,
            height=height,
            previews="".join(f'<img src="{src}" alt="">' for src in sources),
        ),
        encoding="utf-8",
    )
    return host


def _measure(page: str, tmp_path: Path, width: int) -> dict[str, Any]:
    host = _host(tmp_path, page, width, 900)
    dom = _chromium_run(host, max(width, 500) + 40, 1000, "--virtual-time-budget=15000", "--dump-dom")
    found = re.search(r'<pre id="measure">(.*?)</pre>', dom, re.S)
    assert found and found.group(1), dom[-2000:]
    result: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return result


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


@pytest.mark.parametrize("width", [1280, 375])
def test_html_report_fits_the_screen_and_draws_its_charts(
    tmp_path: Path,
    pixel_classifier: None,  # noqa: F811
    width: int,
) -> None:
    options = {"characters": "A-C", "trials": 3, "progress": False, "workers": 1}
    report = evaluate(["mock"], forge=WorldForge(), options=options)
    page = report.to_html()
    measured = _measure(page, tmp_path, width)
    assert measured["innerWidth"] == width
    # the page body never scrolls sideways; wide tables scroll inside their own wrappers
    assert measured["fits"] and not measured["wide"], measured
    assert measured["chartsFit"], measured
    # every level image decodes: 2 programs x 3 letters x 3 trials, worst levels, heatmap previews
    assert measured["images"] >= 18 and measured["previews"] == 3 * 2
    assert measured["decoded"] == measured["images"] + measured["previews"]
    assert min(measured["naturalWidths"]) > 0
    # one bar per program (both default programs are baselines), one cell per letter x program,
    # one segment per program x model
    assert measured["bars"] == 2 and measured["baselineBars"] == 2
    assert measured["cells"] == 3 * 2 and measured["segments"] == 2
    assert measured["charts"] >= 5
    framed, shot = tmp_path / f"framed-{width}.png", tmp_path / f"report-{width}.png"
    _screenshot(_host(tmp_path, page, width, 2400), framed, 2400, max(width, 500))
    from PIL import Image

    with Image.open(framed) as img:
        img.crop((0, 0, width, 2400)).save(shot)
    with Image.open(shot) as img:
        assert img.size == (width, 2400)
    assert _dark_pixels(shot) > 2000  # headings, charts and level images, not a blank page


@pytest.mark.parametrize("width", [1280, 375])
def test_ranking_chart_draws_the_intervals_as_error_bars(
    tmp_path: Path,
    pixel_classifier: None,  # noqa: F811
    width: int,
) -> None:
    """Six letters give the ranking 95 % intervals: one drawn error bar per program, inside the chart."""
    options = {"characters": "A-F", "trials": 2, "progress": False, "workers": 1}
    options["uncertainty_resamples"] = 500
    page = evaluate(["mock"], forge=WorldForge(), options=options).to_html()
    measured = _measure(page, tmp_path, width)
    assert measured["fits"] and not measured["wide"] and measured["chartsFit"], measured
    assert measured["bars"] == 2 and measured["errorBars"] == 2 and measured["errorBarsInside"], measured
