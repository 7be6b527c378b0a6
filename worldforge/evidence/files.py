"""How each bundled file is made safe: sanitized as data where it has structure, reports re-rendered.

Scanning rendered text for secrets fails in exactly the places renderers transform text: HTML entity
escaping and CSV quote doubling turned ``"api_key": "…"`` into forms no rule matched. So a bundle
works on the data first:

* **Reports are re-rendered.** An evaluation run's ``reports/report.json`` (and the failure gallery's
  JSON) is parsed, sanitized as a value and rendered again in every format the run holds (JSON,
  Markdown, CSV, HTML) by the same renderers the run used; a benchmark run's report likewise. A
  report whose payload needs no redaction re-renders to its original bytes.
* **Structured files are sanitized as values.** JSON, JSON Lines and YAML are parsed, every key and
  value is sanitized recursively (strings that themselves hold JSON, YAML, INI, headers, URLs or
  query strings included) and written back in the file's own style (the project's pretty JSON, the
  compact event-log lines, plain indented JSON); an unchanged value keeps its original bytes.
* **Text scanning is the fallback** for files with no structure, and for structured files that do
  not parse.

The ledger never carries a secret: for data paths it lists the lines that changed (rule
``structured-value``), for text the rule that fired.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

import yaml

from worldforge.benchmark.harness import render_csv, render_markdown
from worldforge.core.canonical import JSON, JSONObject, pretty_json
from worldforge.core.redact import Redaction, sanitize_value, sanitize_with_ledger
from worldforge.evaluation.suite import load_suite_module
from worldforge.reports import render_report
from worldforge.reports.json_report import render_gallery_json
from worldforge.reports.markdown import render_gallery_markdown
from worldforge.workspace.layout import LOCAL_DIR, LOCK_NAME

STRUCTURED_RULE = "structured-value"
#: Renders a report payload (parsed JSON) into one of the formats a run holds.
_Renderer = Callable[[JSONObject], str]


#: Largest file a bundle carries; a larger one is listed by digest only.
MAX_ATTACH_BYTES = 10_000_000


def stays_local(rel: str, is_link: bool) -> bool:
    """A run file no bundle and no attestation carries: the lock, the host-local details under
    ``.local/`` (exact request, invocation) and links (their target is not the run's)."""
    return rel == LOCK_NAME or rel.startswith(LOCAL_DIR + "/") or is_link


def exclusion(data: bytes) -> str | None:
    """Why a bundle lists ``data`` by digest instead of carrying it cleaned (``None``: it carries
    it). The one rule for the bundle and for a run attested in place, which must release exactly
    what a bundle would."""
    if len(data) > MAX_ATTACH_BYTES:
        return f"excluded: file exceeds the {MAX_ATTACH_BYTES}-byte attachment limit"
    if is_binary(data):
        return "excluded: binary file cannot be sanitized; digest listed for reference"
    return None


def is_binary(data: bytes) -> bool:
    """Bytes a bundle cannot sanitize as text (not UTF-8, or a NUL in the first 8 KiB): it lists
    them by digest instead of copying them."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return b"\x00" in data[:8192]


@dataclass(frozen=True)
class Cleaned:
    """A file's bundled bytes, what was redacted in it, and how it was made safe."""

    data: bytes
    ledger: list[Redaction]
    method: str  # "re-rendered", "json", "jsonl", "yaml" or "text"


def _line_ledger(before: str, after: str, source: str) -> list[Redaction]:
    """One entry per changed line of ``after`` (1-based), from a line diff; never the text itself."""
    if before == after:
        return []
    counts: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            for line in range(j1 + 1, j2 + 1):
                counts[line] = counts.get(line, 0) + 1
    return [Redaction(STRUCTURED_RULE, source, line, n) for line, n in sorted(counts.items())]


def _json_style(raw: str, value: JSON) -> Callable[[JSON], str] | None:
    """The serializer that wrote ``raw``, when it is one the project uses; ``None`` if unknown."""
    styles: tuple[Callable[[JSON], str], ...] = (
        pretty_json,
        lambda v: json.dumps(v, indent=2, ensure_ascii=False) + "\n",
        lambda v: json.dumps(v, ensure_ascii=False, sort_keys=True, separators=(",", ":")),
        lambda v: json.dumps(v, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n",
        lambda v: json.dumps(v, indent=2, default=str) + "\n",
    )
    for style in styles:
        try:
            if style(value) == raw:
                return style
        except (TypeError, ValueError):
            continue
    return None


class _DuplicateKey(ValueError):
    """A JSON object names a key twice: the parser keeps one value, the bytes hold both."""


def _pairs(pairs: list[tuple[str, JSON]]) -> JSONObject:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _DuplicateKey("duplicate key")
    return out


def _parse_json(text: str) -> JSON:
    """The JSON value of ``text``; :class:`ValueError` when it is not JSON *or* holds text the parsed
    value does not (a duplicate key's first value), so such files are sanitized as text."""
    return json.loads(text, object_pairs_hook=_pairs)


def _clean_json(text: str, source: str, memo: dict[str, str]) -> Cleaned | None:
    try:
        value = _parse_json(text)
    except ValueError:
        return None
    clean = sanitize_value(value, memo=memo)
    if clean == value:
        return Cleaned(text.encode("utf-8"), [], "json")
    style = _json_style(text, value) or (lambda v: json.dumps(v, indent=2, ensure_ascii=False) + "\n")
    before, after = style(value), style(clean)
    return Cleaned(after.encode("utf-8"), _line_ledger(before, after, source), "json")


def _clean_jsonl(text: str, source: str, memo: dict[str, str]) -> Cleaned | None:
    lines = text.split("\n")
    out: list[str] = []
    ledger: list[Redaction] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            out.append(line)
            continue
        try:
            value = _parse_json(line)
        except ValueError:
            return None
        clean = sanitize_value(value, memo=memo)
        if clean == value:
            out.append(line)
            continue
        style = _json_style(line, value) or (lambda v: json.dumps(v, ensure_ascii=False, sort_keys=True))
        out.append(style(clean))
        ledger.append(Redaction(STRUCTURED_RULE, source, number, 1))
    return Cleaned("\n".join(out).encode("utf-8"), ledger, "jsonl")


def _clean_yaml(text: str, source: str, memo: dict[str, str]) -> Cleaned | None:
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return None  # dates, sets …: not JSON-native, so the text path handles it
    clean = sanitize_value(value, memo=memo)
    if clean == value:
        # Comments are not part of the value: the text path still reads the original bytes.
        return _text(text, source, "yaml")
    after = yaml.safe_dump(clean, sort_keys=False, allow_unicode=True)
    before = yaml.safe_dump(value, sort_keys=False, allow_unicode=True)
    cleaned = _text(after, source, "yaml")
    return Cleaned(cleaned.data, _line_ledger(before, after, source) + cleaned.ledger, "yaml")


def _text(text: str, source: str, method: str = "text") -> Cleaned:
    out, ledger = sanitize_with_ledger(text, source)
    return Cleaned(out.encode("utf-8"), ledger, method)


def clean_file(
    source: str, text: str, rendered: str | None = None, memo: dict[str, str] | None = None
) -> Cleaned:
    """The bundled form of a text file named ``source`` (a bundle path).

    ``rendered`` is the file re-rendered from its sanitized report payload
    (:func:`rerender_reports`), which replaces the file as it was rendered during the run. ``memo``
    shares sanitized strings across the files of one bundle.
    """
    memo = {} if memo is None else memo
    if rendered is not None:
        new = rendered
        return Cleaned(new.encode("utf-8"), _line_ledger(text, new, source), "re-rendered")
    suffix = PurePosixPath(source).suffix.lower()
    result: Cleaned | None = None
    if suffix == ".json":
        result = _clean_json(text, source, memo)
    elif suffix in (".jsonl", ".ndjson"):
        result = _clean_jsonl(text, source, memo)
    elif suffix in (".yaml", ".yml"):
        result = _clean_yaml(text, source, memo)
    return result if result is not None else _text(text, source)


# ------------------------------------------------------------------------------------ reports


def _evaluation_renderers() -> dict[str, _Renderer]:

    return {
        "reports/report.json": lambda p: render_report(p, "json"),
        "reports/report.md": lambda p: render_report(p, "markdown"),
        "reports/report.csv": lambda p: render_report(p, "csv"),
        "reports/report.html": lambda p: render_report(p, "html"),
    }


def _gallery_renderers() -> dict[str, _Renderer]:

    return {
        "reports/failure_gallery.json": render_gallery_json,
        "reports/failure_gallery.md": render_gallery_markdown,
    }


def _benchmark_renderers() -> dict[str, _Renderer]:

    return {
        "reports/report.json": pretty_json,
        "reports/report.md": render_markdown,
        "reports/report.csv": render_csv,
    }


def rerender_reports(kind: str, files: dict[str, bytes]) -> dict[str, str]:
    """Reports of one run re-rendered from their sanitized payloads: ``{run-relative path: text}``.

    ``files`` maps run-relative paths to the run's bytes. Only formats the run holds are rendered,
    and only from a payload that parses; a report that cannot be re-rendered (an older layout, a
    renderer error) is left to the structured or text path, which still sanitizes it.
    """
    groups: list[tuple[str, Callable[[], dict[str, _Renderer]]]] = []
    if kind == "evaluation":
        groups = [
            ("reports/report.json", _evaluation_renderers),
            ("reports/failure_gallery.json", _gallery_renderers),
        ]
    elif kind == "benchmark":
        groups = [("reports/report.json", _benchmark_renderers)]
    out: dict[str, str] = {}
    for payload_path, renderers in groups:
        raw = files.get(payload_path)
        if raw is None:
            continue
        try:
            payload = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            continue
        if not isinstance(payload, dict):
            continue
        if kind == "evaluation":  # a built-in suite's own HTML page is registered when it loads
            load_suite_module(str(payload.get("suite_id") or ""))
        clean: JSONObject = sanitize_value(payload)  # the same shape, secrets redacted
        for path, render in renderers().items():
            if path not in files:
                continue
            try:
                original = render(payload)
                text = render(clean)
            except Exception:  # noqa: BLE001 - a renderer that cannot take this payload: fall back
                continue
            if original != files[path].decode("utf-8", "replace") or text == original:
                # Not rendered from this payload by this renderer (or nothing to redact): the
                # structured/text path handles the file as it is.
                continue
            out[path] = text
    return out


__all__ = ["STRUCTURED_RULE", "Cleaned", "clean_file", "is_binary", "rerender_reports"]
