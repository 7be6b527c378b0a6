"""Every planted form is redacted in every context a bundle file can hold it in.

A report renders the same value as HTML text and attributes, a CSV field, a JSON string (sometimes a
JSON string inside a JSON string), a YAML scalar, a URL query and a header line; each context
escapes differently, and the sanitizer must find the secret through every one of them.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import urllib.parse
from collections.abc import Callable

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.leakforms import EVIDENCE_SHAPES, FORMS
from worldforge.core.redact import REDACTED, sanitize_text, sanitize_value, sanitize_with_ledger
from worldforge.core.redact.views import VIEWS, b64_text


def _csv_field(text: str) -> str:
    buffer = io.StringIO()
    csv.writer(buffer).writerow(["row", text, "tail"])
    return buffer.getvalue()


CONTEXTS: dict[str, Callable[[str], str]] = {
    "raw": lambda t: t,
    "html-text": lambda t: f"<td>{html.escape(t, quote=False)}</td>",
    "html-attribute": lambda t: f'<a title="{html.escape(t, quote=True)}">x</a>',
    "csv-field": _csv_field,
    "json-string": lambda t: json.dumps({"note": t}),
    "json-in-json": lambda t: json.dumps({"outer": json.dumps({"note": t})}),
    "json-in-html": lambda t: f"<pre>{html.escape(json.dumps({'note': t}))}</pre>",
    "yaml-scalar": lambda t: yaml.safe_dump({"note": t}),
    "url-query": lambda t: "https://example.test/cb?next=" + urllib.parse.quote_plus(t),
    "header-line": lambda t: "X-Note: " + t.replace("\n", " "),
}


def _encodings(secret: str) -> set[str]:
    """The ways a surviving secret could show up in output (raw or still encoded)."""
    return {
        secret,
        html.escape(secret),
        json.dumps(secret)[1:-1],
        json.dumps(json.dumps(secret)[1:-1])[1:-1],
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret),
        secret.replace('"', '""'),
    }


CASES = [
    (form.id, context, form)
    for form in FORMS
    for context in CONTEXTS
    if not (context == "header-line" and "\n" in form.text)  # a header is one line
]


@pytest.mark.parametrize(("form_id", "context", "form"), CASES, ids=[f"{c[0]}@{c[1]}" for c in CASES])
def test_every_form_is_redacted_in_every_context(form_id: str, context: str, form: object) -> None:
    text = CONTEXTS[context](form.text)  # type: ignore[attr-defined]
    out, ledger = sanitize_with_ledger(text, "planted.txt")
    for secret in form.secrets:  # type: ignore[attr-defined]
        survivors = [enc for enc in _encodings(secret) if enc and enc in out]
        assert not survivors, f"{form_id} in {context}: survived as {survivors[0]!r} in {out!r}"
    assert ledger, f"{form_id} in {context}: redacted without a ledger line"
    assert sanitize_text(out) == out, f"{form_id} in {context}: not idempotent"
    for entry in ledger:  # the ledger names rule, file, line and count, never the secret
        dumped = json.dumps(entry.to_dict())
        assert not any(s in dumped for s in form.secrets)  # type: ignore[attr-defined]


@pytest.mark.parametrize("shape", EVIDENCE_SHAPES)
@pytest.mark.parametrize("context", sorted(CONTEXTS))
def test_evidence_shapes_survive_every_context(shape: str, context: str) -> None:
    text = CONTEXTS[context](shape)
    assert sanitize_text(text) == text


def test_structured_redaction_keeps_the_document_valid() -> None:
    """Redacting inside a JSON document through the escape view leaves valid JSON behind."""
    doc = {"item": "reply", "log": "token = abc123def456\nuser: x", "args": ["--password", "p4ss-word-9"]}
    out = sanitize_text(json.dumps(doc))
    parsed = json.loads(out)
    assert parsed["log"] == f"token = {REDACTED}\nuser: x"
    html_out = sanitize_text(html.escape(json.dumps(doc)))
    assert json.loads(html.unescape(html_out))["log"] == f"token = {REDACTED}\nuser: x"


def test_value_sanitizer_reads_strings_that_hold_json() -> None:
    value = {"note": json.dumps({"credentials": {"user": "u1", "pw": "pw-9Zq"}}), "n": 3}
    clean = sanitize_value(value)
    inner = json.loads(clean["note"])
    assert inner == {"credentials": {"user": REDACTED, "pw": REDACTED}}
    assert clean["n"] == 3


def test_name_value_pairs_and_secret_containers() -> None:
    env = [{"name": "OPENAI_API_KEY", "value": "nv-1"}, {"name": "MODEL", "value": "qwen2.5"}]
    assert sanitize_value({"env": env}) == {
        "env": [{"name": "OPENAI_API_KEY", "value": REDACTED}, {"name": "MODEL", "value": "qwen2.5"}]
    }
    assert sanitize_value({"credentials": {"user": "u", "port": 5432, "tls": True}}) == {
        "credentials": {"user": REDACTED, "port": REDACTED, "tls": True}
    }


@pytest.mark.parametrize("view", VIEWS, ids=[v.name for v in VIEWS])
def test_views_map_decoded_spans_back_to_whole_escapes(view: object) -> None:
    samples = {
        "html": "a &quot;b&quot; &amp; c",
        "url": "a%20b%2Fc%3D",
        "escape": 'a \\"b\\" \\n c \\u00e9',
        "csv": 'x,"say ""hi"" now",y',
        "yaml": "note: 'it''s ''quoted'' here'",
    }
    text = samples[view.name]  # type: ignore[attr-defined]
    decoded = view.decode(text)  # type: ignore[attr-defined]
    assert decoded is not None
    for position in range(len(decoded.text) + 1):
        start = decoded.to_original(position)
        end = decoded.to_original(position, end=True)
        assert 0 <= start <= end <= len(text)
    assert decoded.to_original(len(decoded.text), end=True) == len(text)


def test_base64_only_counts_text() -> None:
    assert b64_text(base64.b64encode(b"user:pw-123").decode()) == "user:pw-123"
    assert b64_text("0123456789abcdef0123456789abcdef") is None  # a hex digest decodes to bytes


SECRET = st.text(
    alphabet="ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789", min_size=10, max_size=24
)
KEYS = st.sampled_from(["password", "api_key", "client_secret", "token", "private_key", "X-Api-Key", "pwd"])
SHAPES = st.sampled_from(
    [
        '{{"{k}": "{s}"}}',
        "{k} = {s}",
        "{k}: {s}",
        "--{k} {s}",
        "| {k} | {s}9 |",
        "**{k}**: {s}",
        '<input name="{k}" value="{s}">',
        '{{"name": "{k}", "value": "{s}"}}',
    ]
)


@settings(max_examples=150, deadline=None)
@given(secret=SECRET, key=KEYS, shape=SHAPES, context=st.sampled_from(sorted(CONTEXTS)))
def test_property_keyed_secrets_never_survive_any_context(
    secret: str, key: str, shape: str, context: str
) -> None:
    secret = secret + "7q"  # a digit/letter mix, as generated secrets are
    text = CONTEXTS[context](shape.format(k=key, s=secret))
    out = sanitize_text(text)
    assert not any(enc in out for enc in _encodings(secret)), (text, out)
