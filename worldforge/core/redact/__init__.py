"""Redaction: the project's one sanitizer, at the bottom of the stack so every layer imports it plainly.

Secrets, signed-URL parameters and host-local paths are redacted in place (:mod:`.engine`), by rules
that are data (:mod:`.keys`, :mod:`.rules`, :mod:`.forms`), on the text as written and on every
decoded view of it (:mod:`.views`); failure-gallery previews summarise metrics safely
(:mod:`.preview`). Nothing here imports a higher layer, and no caller falls back to unsanitized text.
"""

from worldforge.core.redact.engine import sanitize_text, sanitize_with_ledger
from worldforge.core.redact.keys import (
    REDACTED,
    SANITIZER_VERSION,
    Redaction,
    Rule,
    is_harmless_value,
    is_sensitive_key,
)
from worldforge.core.redact.preview import metrics_preview
from worldforge.core.redact.rules import RULES, rule_ids
from worldforge.core.redact.values import sanitize_argv, sanitize_value

__all__ = [
    "REDACTED",
    "RULES",
    "SANITIZER_VERSION",
    "Redaction",
    "Rule",
    "is_harmless_value",
    "is_sensitive_key",
    "metrics_preview",
    "rule_ids",
    "sanitize_argv",
    "sanitize_text",
    "sanitize_value",
    "sanitize_with_ledger",
]
