"""The sanitizer's public entry point for evidence code and users of the earlier import path.

Redaction itself lives at the bottom of the stack (:mod:`worldforge.core.redact`) so that lower
layers import it without an import cycle; this module re-exports its public API unchanged.
"""

from worldforge.core.redact import (
    REDACTED,
    RULES,
    SANITIZER_VERSION,
    Redaction,
    Rule,
    is_harmless_value,
    is_sensitive_key,
    metrics_preview,
    rule_ids,
    sanitize_argv,
    sanitize_text,
    sanitize_value,
    sanitize_with_ledger,
)

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
