"""Regenerate the secret-sample fixture from gitleaks' published rule test data.

    python -m worldforge.evidence.corpus.build --gitleaks PATH
        [--output tests/fixtures/secrets/gitleaks_samples.json]

Why: the redactor and the bundle gate were first measured on secrets we wrote ourselves, which
grades our own homework: a pattern we never thought of is missing from both the detector and
the test. gitleaks (MIT licence) ships, next to every rule, the true positives the rule must find
and the benign look-alikes it must leave alone. Adopting that corpus, written by people who never
saw our code, keeps the recall and false-positive figures of
:mod:`worldforge.evidence.corpus.measure` honest.

How: PATH is a gitleaks checkout or bare git directory; files are read at ``HEAD`` through
``git show`` so the fixture records the exact commit it came from. The Go rule files under
``cmd/generate/config/rules/`` are tokenised and the few expressions their tests use are evaluated
statically: string literals (interpreted and raw), ``+`` concatenation, ``fmt.Sprintf``,
``append``, slice and map literals, package-level variables, the regex helper functions of
``cmd/generate/config/utils/patterns.go`` (read from the same commit), and
``secrets.NewSecret(regex)``, for which a small generator below draws a concrete value from a
random generator seeded by the rule id, so the output is byte-stable. Anything else is counted as
skipped. Where a true positive is a longer text, the secret span is located with that rule's final
regex from ``config/gitleaks.toml`` (read at build time, never copied here), using the rule's
``secretGroup`` or else the first non-empty capture group, as gitleaks does. Go-only regex syntax
(mid-pattern flag groups, ``\\z``, POSIX classes) is rewritten to Python's; a sample whose rule is
missing, does not compile in Python or does not match is skipped and counted. False positives that
are benign only because of their file path (``ValidateWithPaths``) are skipped too.

The fixture names its generator by the path it had when the fixture was built
(``scripts/build_secret_corpus.py``); the text below keeps that name so that a rebuild from the
same gitleaks commit reproduces the fixture byte for byte.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from worldforge.evidence.corpus.goeval import (
    Generated,
    GoFunction,
    GoValue,
    Scope,
    Unknown,
    Validated,
    as_str,
)
from worldforge.evidence.corpus.gofile import GoFile, evaluate_variable, parse_go_file, rule_id, run_function
from worldforge.evidence.corpus.goregex import RuleRegex, load_rule_regexes, locate_secret
from worldforge.evidence.corpus.source import (
    CONFIG_FILE,
    DEFAULT_OUTPUT,
    LICENCE,
    MAX_FALSE_POSITIVE_CHARS,
    PATTERNS_FILE,
    RULES_DIR,
    GitTree,
    family_of,
)


class TruePositive(TypedDict):
    """A secret sample: the text and the secret span gitleaks reports in it, by rule family."""

    family: str
    provider: str
    rule: str
    secret: str
    text: str


class FalsePositive(TypedDict):
    """A look-alike a rule must not flag; ``kind`` is ``pattern`` (some rule's regex matches it,
    only allowlists or thresholds exclude it) or ``benign`` (no gitleaks pattern matches it)."""

    family: str
    provider: str
    rule: str
    text: str
    kind: str


class CorpusSource(TypedDict):
    """Where the samples come from: the gitleaks commit and files, under its licence."""

    repository: str
    commit: str
    licence: str
    paths: list[str]
    generated_by: str


class CorpusDocument(TypedDict):
    """The sample fixture (``tests/fixtures/secrets/gitleaks_samples.json``) :mod:`.measure` reads."""

    source: CorpusSource
    description: str
    true_positives: list[TruePositive]
    false_positives: list[FalsePositive]
    skipped: dict[str, int]


@dataclass
class Corpus:
    true_positives: dict[tuple[str, str, str], TruePositive] = field(default_factory=dict)
    false_positives: dict[tuple[str, str], FalsePositive] = field(default_factory=dict)
    skipped: Counter[tuple[str, str]] = field(default_factory=Counter)  # (kind, family)
    unmatched_generated: list[str] = field(default_factory=list)
    reasons: Counter[str] = field(default_factory=Counter)

    def skip(self, kind: str, family: str, reason: str) -> None:
        self.skipped[(kind, family)] += 1
        self.reasons[f"{kind}: {reason}"] += 1


def _flatten(value: GoValue) -> Iterable[GoValue]:
    if isinstance(value, list):
        for item in value:
            yield from _flatten(item)
    else:
        yield value


def add_samples(
    corpus: Corpus,
    provider: str,
    rule: str,
    validated: Validated,
    regex: RuleRegex | None,
    all_regexes: tuple[RuleRegex, ...] = (),
) -> None:
    family = family_of(provider, rule)
    tps = validated.true_positives
    from_paths = isinstance(tps, dict)
    for item in _flatten(list(tps.values()) if isinstance(tps, dict) else tps):
        if isinstance(item, Generated):
            text, secret = item.text, item.secret
            if regex is not None and regex.pattern is not None and not regex.pattern.search(text):
                corpus.unmatched_generated.append(f"{rule}: {secret}")
        elif isinstance(item, str):
            if not item.strip():
                corpus.skip("true_positives", family, "path-only sample" if from_paths else "empty")
                continue
            if regex is None:
                corpus.skip("true_positives", family, "rule not in config/gitleaks.toml")
                continue
            if regex.pattern is None:
                corpus.skip("true_positives", family, "rule regex not Python-compatible")
                continue
            located = locate_secret(regex, item)
            if located is None:
                corpus.skip("true_positives", family, "rule regex does not match")
                continue
            text, secret = item, located
        else:
            reason = item.reason if isinstance(item, Unknown) else type(item).__name__
            corpus.skip("true_positives", family, f"not static: {reason}")
            continue
        corpus.true_positives[(rule, secret, text)] = {
            "family": family,
            "provider": provider,
            "rule": rule,
            "secret": secret,
            "text": text,
        }
    fps = validated.false_positives
    if isinstance(fps, dict):  # path-dependent look-alikes: the text alone is not benign
        for _ in fps:
            corpus.skip("false_positives", family, "path-dependent false positive")
        return
    for item in _flatten(fps):
        fp_text = as_str(item)
        if fp_text is None:
            reason = item.reason if isinstance(item, Unknown) else type(item).__name__
            corpus.skip("false_positives", family, f"not static: {reason}")
        elif len(fp_text) > MAX_FALSE_POSITIVE_CHARS:
            corpus.skip("false_positives", family, "longer than 500 characters")
        else:
            # "pattern": some gitleaks rule's regex matches the look-alike and only allowlists,
            # stop words or entropy thresholds exclude it (placeholders such as ghp_xxxx…, known
            # public keys, values under secret names); "benign": no gitleaks pattern matches it.
            shaped = any(r.pattern is not None and r.pattern.search(fp_text) for r in all_regexes)
            corpus.false_positives[(rule, fp_text)] = {
                "family": family,
                "provider": provider,
                "rule": rule,
                "text": fp_text,
                "kind": "pattern" if shaped else "benign",
            }


def build(tree: GitTree) -> tuple[CorpusDocument, Corpus]:
    regexes = load_rule_regexes(tree.read(CONFIG_FILE))
    helpers = parse_go_file(tree.read(PATTERNS_FILE)).functions
    functions: dict[str, GoFunction] = {f"utils.{name}": fn for name, fn in helpers.items()}
    files: dict[str, GoFile] = {}
    for path in tree.list_dir(RULES_DIR):
        if path.endswith(".go") and not path.endswith("_test.go"):
            files[Path(path).stem] = parse_go_file(tree.read(path))
    for parsed in files.values():
        functions.update(parsed.functions)
    package: dict[str, GoValue] = {}
    for parsed in files.values():
        for name, tokens, start in parsed.variables:
            scope = Scope({}, package, functions, seed=f"var:{name}")
            package[name] = evaluate_variable(tokens, start, scope)
    stop_words = package.get("DefaultStopWords", [])
    stops = tuple(w.lower() for w in stop_words if isinstance(w, str)) if isinstance(stop_words, list) else ()

    corpus = Corpus()
    all_regexes = tuple(regexes[name] for name in sorted(regexes))
    for provider, parsed in sorted(files.items()):
        for fname, function in sorted(parsed.functions.items()):
            probe = Scope({}, package, functions, seed=fname, stop_words=stops)
            rule = rule_id(function, probe)
            if rule is None:
                continue
            scope = Scope({}, package, functions, seed=rule, stop_words=stops)
            validated = run_function(function, scope)
            if validated is not None:
                add_samples(corpus, provider, rule, validated, regexes.get(rule), all_regexes)

    def tp_key(s: TruePositive) -> tuple[str, ...]:
        return (s["family"], s["provider"], s["rule"], s["secret"], s["text"])

    def fp_key(s: FalsePositive) -> tuple[str, ...]:
        return (s["family"], s["provider"], s["rule"], s["text"])

    document: CorpusDocument = {
        "source": {
            "repository": "https://github.com/gitleaks/gitleaks",
            "commit": tree.commit,
            "licence": LICENCE,
            "paths": [f"{RULES_DIR}/*.go", CONFIG_FILE],
            "generated_by": "scripts/build_secret_corpus.py",
        },
        "description": (
            "Secret samples adopted from gitleaks' rule tests: per rule, true positives (the text "
            "and the secret span gitleaks reports in it; generated samples use gitleaks' one-line "
            "form '<id>_api_token = \"<secret>\"') and benign look-alikes the rule must not flag, "
            "grouped into rule families. Input of scripts/measure_secret_corpus.py."
        ),
        "true_positives": sorted(corpus.true_positives.values(), key=tp_key),
        "false_positives": sorted(corpus.false_positives.values(), key=fp_key),
        "skipped": {
            kind: sum(n for (k, _), n in corpus.skipped.items() if k == kind)
            for kind in ("true_positives", "false_positives")
        },
    }
    return document, corpus


def summary(document: CorpusDocument, corpus: Corpus) -> str:
    tps = Counter(s["family"] for s in document["true_positives"])
    fps = Counter(s["family"] for s in document["false_positives"])
    families = sorted(set(tps) | set(fps) | {f for _, f in corpus.skipped})
    lines = [f"{'family':32} {'tps':>6} {'fps':>6} {'skip-tp':>8} {'skip-fp':>8}"]
    for fam in families:
        lines.append(
            f"{fam:32} {tps[fam]:>6} {fps[fam]:>6} "
            f"{corpus.skipped[('true_positives', fam)]:>8} {corpus.skipped[('false_positives', fam)]:>8}"
        )
    lines.append(
        f"{'all':32} {sum(tps.values()):>6} {sum(fps.values()):>6} "
        f"{document['skipped']['true_positives']:>8} {document['skipped']['false_positives']:>8}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m worldforge.evidence.corpus.build", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--gitleaks", type=Path, required=True, help="gitleaks checkout or bare git dir")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--verbose", action="store_true", help="print why samples were skipped")
    args = parser.parse_args(argv)
    document, corpus = build(GitTree(args.gitleaks))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} ({len(text.encode('utf-8'))} bytes) from {document['source']['commit']}")
    print(summary(document, corpus))
    if args.verbose:
        for reason, n in sorted(corpus.reasons.items()):
            print(f"  skipped {n:>4}  {reason}")
        for entry in corpus.unmatched_generated:
            print(f"  generated sample not matched by its rule: {entry}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
