"""Recall and false-positive rate of the redactor and the bundle gate on a secret corpus we did not write.

    python -m worldforge.evidence.corpus.measure [--corpus tests/fixtures/secrets/gitleaks_samples.json]
        [--output docs/secret_corpus.json]

The corpus is gitleaks' published sample secrets (true positives and benign look-alikes per rule;
source, commit and licence in the fixture). Each true positive is wrapped in the contexts gitleaks'
own sample generator uses (INI, JSON, YAML, XML, shell/Makefile, Python, Go …) and in the contexts
that generator lacks and that once leaked here (escaped JSON, name/value JSON, XML attribute, YAML
block scalar, URL query, CSV, HTML attribute, header line). Wrapping uses a key named after the rule
(``sendgrid_api_token = …``), as a configuration file or log would name it; a bare token with no key
is measured separately (``bare``), because a password-shaped string with no name and no known
prefix is indistinguishable from any other identifier.

Figures per rule family, for the redactor (is the secret gone from the output?) and the gate (does
the detector report the wrapped secret, and report nothing on look-alikes?). Writes JSON, prints a
summary. Deterministic: no timing, no randomness.
"""

from __future__ import annotations

import argparse
import csv
import html
import io
import json
import sys
import urllib.parse
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Literal, TypedDict, get_args

from worldforge.core.canonical import pretty_json
from worldforge.core.redact import sanitize_text
from worldforge.evidence.corpus.build import CorpusDocument
from worldforge.evidence.detect import KnownValues, scan_text
from worldforge.evidence.gate import scan_document

ROOT = Path(__file__).resolve().parents[3]

DEFAULT_CORPUS = ROOT / "tests" / "fixtures" / "secrets" / "gitleaks_samples.json"


def key_for(rule: str) -> str:
    """A configuration key named after the rule, as gitleaks' generator does (``<id>_token``)."""
    base = rule.replace("-", "_")
    return (
        base
        if any(w in base for w in ("key", "token", "secret", "password", "credential"))
        else base + "_token"
    )


def value_of(secret: str) -> str:
    """The secret value of a sample as gitleaks reports it: some rules report the value with its
    quotes (``"user:pw"``) or with its YAML key (``key: c2VjcmV0``); the wrapper adds its own."""
    name, sep, value = secret.partition(": ")
    if sep and value and " " not in value and all(c.isalnum() or c in "._-" for c in name):
        secret = value
    if len(secret) > 2 and secret[0] == secret[-1] and secret[0] in "\"'":
        secret = secret[1:-1]
    return secret


def _csv(key: str, secret: str) -> str:
    buffer = io.StringIO()
    csv.writer(buffer).writerow([key, secret])
    return buffer.getvalue()


#: Contexts of gitleaks' sample generator, then the ones it lacks.
CONTEXTS: dict[str, Callable[[str, str], str]] = {
    "ini": lambda k, s: f"[section]\n{k} = {s}\n",
    "ini-quoted": lambda k, s: f'{k} = "{s}"\n',
    "json": lambda k, s: json.dumps({k: s}),
    "yaml": lambda k, s: f"config:\n  {k}: {s}\n",
    "yaml-quoted": lambda k, s: f"{k}: '{s}'\n",
    "xml": lambda k, s: f"<config><{k}>{html.escape(s)}</{k}></config>",
    "shell-export": lambda k, s: f"export {k.upper()}={s}\n",
    "makefile": lambda k, s: f"{k.upper()} := {s}\n",
    "python": lambda k, s: f'{k} = "{s}"\n',
    "go": lambda k, s: f'{k} := "{s}"\n',
    "toml": lambda k, s: f'{k} = "{s}"\n',
    # Contexts the generator does not produce, which leaked here before.
    "json-escaped": lambda k, s: json.dumps({"log": json.dumps({k: s})}),
    "json-name-value": lambda k, s: json.dumps([{"name": k.upper(), "value": s}]),
    "xml-attribute": lambda k, s: f'<setting name="{k}" value="{html.escape(s, quote=True)}"/>',
    "yaml-block": lambda k, s: f"{k}: |\n  {s}\nnext: 1\n",
    "url-query": lambda k, s: f"https://example.test/cb?{k}={urllib.parse.quote(s, safe='')}",
    "csv": _csv,
    "html-attribute": lambda k, s: f'<td title="{html.escape(json.dumps({k: s}), quote=True)}">x</td>',
    "header-line": lambda k, s: f"X-Api-Key: {s}\n",
}


def _encodings(secret: str) -> set[str]:
    return {
        secret,
        html.escape(secret),
        json.dumps(secret)[1:-1],
        urllib.parse.quote(secret, safe=""),
        secret.replace('"', '""'),
    }


def _gone(secret: str, out: str) -> bool:
    return not any(enc in out for enc in _encodings(secret) if enc)


def _rate(hits: int, total: int) -> float | None:
    return round(hits / total, 4) if total else None


class Rate(TypedDict):
    """How many of ``total`` samples a check caught (``rate`` is ``None`` for no samples)."""

    hits: int
    total: int
    rate: float | None


class CorpusIdentity(TypedDict):
    """Which gitleaks commit the measured samples come from."""

    repository: str
    commit: str
    licence: str


#: The per-family tables of a measurement.
Table = Literal[
    "redactor_recall_keyed",
    "redactor_recall_bare",
    "redactor_false_positive_rate",
    "gate_recall_keyed",
    "gate_false_positive_rate",
    "redactor_benign_redacted_rate",
    "gate_benign_flagged_rate",
]


class Measurement(TypedDict):
    """``docs/secret_corpus.json``: per rule family (and ``all``), what the redactor and the gate
    catch of the corpus, with the benign look-alikes they hit and the keyed samples the redactor
    missed (first 200)."""

    schema_version: int
    corpus: CorpusIdentity
    contexts: list[str]
    redactor_recall_keyed: dict[str, Rate]
    redactor_recall_bare: dict[str, Rate]
    redactor_false_positive_rate: dict[str, Rate]
    gate_recall_keyed: dict[str, Rate]
    gate_false_positive_rate: dict[str, Rate]
    redactor_benign_redacted_rate: dict[str, Rate]
    gate_benign_flagged_rate: dict[str, Rate]
    benign_hits: list[dict[str, str]]
    redactor_misses_keyed: list[dict[str, str]]


def measure(corpus: CorpusDocument) -> Measurement:
    known = KnownValues()
    keyed: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # family -> [redacted, total]
    bare: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    gate_hits: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses: list[dict[str, str]] = []
    for sample in corpus["true_positives"]:
        family, rule, secret = sample["family"], sample["rule"], sample["secret"]
        secret = value_of(secret.strip())
        if "\n" in secret or len(secret) < 8:
            continue  # multi-line samples (PEM bodies) are measured through their own text below
        key = key_for(rule)
        for context, wrap in CONTEXTS.items():
            text = wrap(key, secret)
            ok = _gone(secret, sanitize_text(text))
            keyed[family][0] += ok
            keyed[family][1] += 1
            if not ok:
                misses.append({"rule": rule, "context": context})
            found = bool(scan_document(text, known))
            gate_hits[family][0] += found
            gate_hits[family][1] += 1
        raw = sample["text"]
        bare[family][0] += _gone(secret, sanitize_text(raw))
        bare[family][1] += 1
    fp_redactor: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    fp_gate: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    benign_redactor: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    benign_gate: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    benign_hits: list[dict[str, str]] = []
    for look_alike in corpus["false_positives"]:
        family, text = look_alike["family"], look_alike["text"]
        redacted, flagged = sanitize_text(text) != text, bool(scan_text(text, known))
        fp_redactor[family][0] += redacted
        fp_redactor[family][1] += 1
        fp_gate[family][0] += flagged
        fp_gate[family][1] += 1
        if look_alike.get("kind") == "benign":
            benign_redactor[family][0] += redacted
            benign_redactor[family][1] += 1
            benign_gate[family][0] += flagged
            benign_gate[family][1] += 1
            if redacted or flagged:
                hit = {"rule": look_alike["rule"], "redactor": str(redacted), "gate": str(flagged)}
                benign_hits.append(hit)
    families = sorted(set(keyed) | set(bare) | set(fp_redactor) | set(benign_redactor))

    def table(counts: dict[str, list[int]]) -> dict[str, Rate]:
        rows: dict[str, Rate] = {
            f: {"hits": counts[f][0], "total": counts[f][1], "rate": _rate(*counts[f])} for f in families
        }
        hits, total = sum(c[0] for c in counts.values()), sum(c[1] for c in counts.values())
        rows["all"] = {"hits": hits, "total": total, "rate": _rate(hits, total)}
        return rows

    return {
        "schema_version": 1,
        "corpus": {
            "repository": corpus["source"]["repository"],
            "commit": corpus["source"]["commit"],
            "licence": corpus["source"]["licence"],
        },
        "contexts": sorted(CONTEXTS),
        "redactor_recall_keyed": table(keyed),
        "redactor_recall_bare": table(bare),
        "redactor_false_positive_rate": table(fp_redactor),
        "gate_recall_keyed": table(gate_hits),
        "gate_false_positive_rate": table(fp_gate),
        "redactor_benign_redacted_rate": table(benign_redactor),
        "gate_benign_flagged_rate": table(benign_gate),
        "benign_hits": sorted(benign_hits, key=lambda h: (h["rule"], h["redactor"], h["gate"])),
        "redactor_misses_keyed": sorted(misses, key=lambda m: (m["rule"], m["context"]))[:200],
    }


_TABLE_COLUMNS: tuple[tuple[Table, str], ...] = (
    ("redactor_recall_keyed", "redactor recall, keyed"),
    ("redactor_recall_bare", "redactor recall, bare"),
    ("gate_recall_keyed", "gate recall, keyed"),
    ("redactor_benign_redacted_rate", "benign redacted"),
    ("gate_benign_flagged_rate", "benign flagged by gate"),
    ("redactor_false_positive_rate", "all gitleaks FPs redacted"),
)


def markdown_table(result: Measurement) -> str:
    """The per-family table of ``docs/evidence.md``."""
    families = [f for f in result["redactor_recall_keyed"] if f != "all"] + ["all"]
    lines = [
        "| family | " + " | ".join(title for _, title in _TABLE_COLUMNS) + " |",
        "|---|" + "---:|" * len(_TABLE_COLUMNS),
    ]
    for family in families:
        cells = []
        for name, _ in _TABLE_COLUMNS:
            row = result[name].get(family)
            cells.append(
                "–" if not row or not row["total"] else f"{row['rate']:.3f} ({row['hits']}/{row['total']})"
            )
        lines.append(f"| {family} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m worldforge.evidence.corpus.measure", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "secret_corpus.json")
    parser.add_argument("--markdown", action="store_true", help="also print the docs/evidence.md table")
    args = parser.parse_args(argv)
    result = measure(json.loads(args.corpus.read_text(encoding="utf-8")))
    args.output.write_text(pretty_json(result), encoding="utf-8")
    names: tuple[Table, ...] = get_args(Table)
    for name in names:
        row = result[name]["all"]
        print(f"{name:32} {row['hits']:>6}/{row['total']:<6} {row['rate']}")
    if args.markdown:
        print(markdown_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
