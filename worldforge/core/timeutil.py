"""UTC timestamps in one format. Timestamps never enter digested payloads."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    """Current UTC time."""
    return datetime.now(UTC)


def utc_now_iso() -> str:
    """Current UTC time as ISO 8601 with seconds precision and ``Z`` suffix."""
    return utc_now().strftime("%Y-%m-%dT%H:%M:%SZ")


def iso(dt: datetime) -> str:
    """Format an aware datetime in the project's timestamp format."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


__all__ = ["iso", "utc_now", "utc_now_iso"]
