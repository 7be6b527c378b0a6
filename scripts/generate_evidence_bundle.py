#!/usr/bin/env python3
"""Bundle one or more preserved runs into a single checkout-safe evidence bundle.

    python scripts/generate_evidence_bundle.py --workspace-dir .worldforge [--run-id ID ...]
        [--output DIR] [--overwrite] [--zip]

Default output: ``<workspace>/evidence-bundles/<YYYYMMDDTHHMMSSZ>/``. Every run file is sanitized in
place (secrets, signed-URL parameters, host paths), listed in ``evidence_manifest.json`` with its
digests, and summarised in ``summary.md``; ``--zip`` also writes a byte-reproducible zip that
``worldforge runs verify`` accepts. A second, independent detector then re-scans every written
byte and name; anything it finds marks the bundle unsafe, keeps no zip and exits 1 listing file,
line and rule. Exit 0 on success, 1 when the gate fails, 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workspace-dir", type=Path, default=None, help="run workspace (default: config or .worldforge)"
    )
    parser.add_argument(
        "--run-id", action="append", default=[], help="run id to include (repeatable; default all)"
    )
    parser.add_argument("--output", type=Path, default=None, help="bundle directory")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty output directory")
    parser.add_argument("--zip", action="store_true", help="also write <output>.zip (byte-reproducible)")
    args = parser.parse_args(argv)

    from worldforge.config import default_workspace_dir
    from worldforge.core.errors import WorldForgeError
    from worldforge.core.redact import sanitize_text
    from worldforge.evidence.bundle import build_bundle

    workspace = args.workspace_dir or default_workspace_dir()
    output = args.output or workspace / "evidence-bundles" / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    try:
        result = build_bundle(workspace, args.run_id, output, overwrite=args.overwrite, make_zip=args.zip)
    except WorldForgeError as exc:
        print(f"error: {sanitize_text(str(exc))}", file=sys.stderr)
        return 2
    manifest = result.manifest
    shown = sanitize_text(str(result.output_dir))  # printed lines leave the machine in issues too
    print(f"wrote {shown}")
    print(f"manifest: {shown}/evidence_manifest.json")
    print(f"summary: {shown}/summary.md")
    if result.zip_path:
        print(f"zip: {sanitize_text(str(result.zip_path))}")
    print(
        f"runs: {manifest['run_count']}  included: {manifest['included_count']}  "
        f"excluded: {manifest['excluded_count']}  redactions: {manifest['redaction_count']}  "
        f"safe_to_attach: {str(manifest['safe_to_attach']).lower()}"
    )
    if not result.safe_to_attach:
        for line in result.gate_lines():
            print(f"gate: {line}", file=sys.stderr)
        print(
            "error: the bundle gate found secret- or host-shaped text; nothing is marked safe.",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
