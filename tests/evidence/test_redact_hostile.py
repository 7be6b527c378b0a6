"""Forms a hostile review planted that the earlier corpora did not hold, through every bundle path.

The planted forms themselves live in ``tests/leakforms.py`` (so the context, gate and planted-run
tests cover them); this module holds what those cannot express: JSON that parses to something
other than its text (duplicate keys), values whose structure carries the secret (a key split across
nesting levels, a pair in a list, a number), and documentation look-alikes that must stay readable.
"""

from __future__ import annotations

import pytest

from worldforge.core.redact import REDACTED, sanitize_text, sanitize_value
from worldforge.evidence.detect import KnownValues
from worldforge.evidence.files import clean_file
from worldforge.evidence.gate import scan_document

SECRET = "dk-4Rt7Kx2Wq9"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("record.json", f'{{"password": "{SECRET}", "password": ""}}\n'),
        ("events.jsonl", f'{{"msg": "ok"}}\n{{"token": "{SECRET}", "token": null}}\n'),
        ("record.json", f'{{"note": "fine", "note": "api_key = {SECRET}"}}'),
    ],
)
def test_text_a_parser_discards_is_still_sanitized(name: str, text: str) -> None:
    """A duplicate key's first value is not in the parsed data, but it is in the bytes: a file whose
    data needed no redaction is still sanitized as text unless re-serializing gives its bytes back."""
    out = clean_file(f"runs/r/{name}", text).data.decode("utf-8")
    assert SECRET not in out
    assert scan_document(out, KnownValues()) == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"api": {"key": SECRET}}, {"api": {"key": REDACTED}}),
        ({"Access": {"Key": SECRET, "region": "eu"}}, {"Access": {"Key": REDACTED, "region": "eu"}}),
        ({"field": "password", "value": SECRET}, {"field": "password", "value": REDACTED}),
        ({"header": "X-Api-Key", "value": SECRET}, {"header": "X-Api-Key", "value": REDACTED}),
        ([["OPENAI_API_KEY", SECRET]], [["OPENAI_API_KEY", REDACTED]]),
        (["mysqldump", "--password", SECRET, "db"], ["mysqldump", "--password", REDACTED, "db"]),
        ({"password": 8473625190}, {"password": REDACTED}),
        ({"db": {"pin": 1234, "password": 8473625190}}, {"db": {"pin": 1234, "password": REDACTED}}),
    ],
)
def test_structure_carries_the_secret(value: object, expected: object) -> None:
    assert sanitize_value(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        {"cache": {"key": "letters/A.json"}},
        {"items": [{"key": "object-swap", "value": 3}]},
        [["score", "0.97"], ["letter", "A"]],
        ["worldforge", "eval", "--suite", "science-birds"],
        {"token_budget": 25000, "max_tokens": 512, "prompt_tokens": 10},
        {"seed": 123456789, "auth_retries": 3},
    ],
)
def test_structure_that_is_evidence_stays(value: object) -> None:
    assert sanitize_value(value) == value


@pytest.mark.parametrize(
    "text",
    [
        "model,tokens,score\nqwen2.5,1234,0.97\n",
        "| letter | score | passed |\n| --- | --- | --- |\n| A | 0.97 | true |\n",
        "user,password,role\n",  # a header row alone holds no secret
        "Use `make test` for the password reset flow.",
        "the secret key: see the docs",
        "docker login -u bob --password-stdin registry.example.test",
        '<input type="password" name="pw" value="">',
        "https://app.example.test/a;jsessionid=[redacted]?x=1",
    ],
)
def test_look_alikes_of_the_new_forms_stay(text: str) -> None:
    assert sanitize_text(text) == text
