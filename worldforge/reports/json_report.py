"""JSON renderer: the canonical payload itself (RFC 8785, one line, final newline)."""

from __future__ import annotations

from collections.abc import Mapping

from worldforge.core.canonical import canonical_json_text, pretty_json


def render_json(payload: Mapping[str, object]) -> str:
    """Single-line canonical JSON, so the file's digest is reproducible with any RFC 8785 tool."""
    return canonical_json_text(payload) + "\n"


def render_gallery_json(gallery: Mapping[str, object]) -> str:
    """Failure gallery for issue attachments: deterministic, indented for people."""
    return pretty_json(gallery)


__all__ = ["render_gallery_json", "render_json"]
