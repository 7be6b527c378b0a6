#!/usr/bin/env python3
"""Bundle preserved runs into one checkout-safe evidence bundle: ``worldforge runs bundle`` under the
spelling the evaluation docs give.

    python scripts/generate_evidence_bundle.py --workspace-dir .worldforge [--run-id ID ...]
        [--output DIR] [--overwrite] [--zip]

Everything happens in ``worldforge runs bundle`` (several ids, or ``--all`` when no ``--run-id``
is given); this file only translates the options, so the two spellings cannot drift apart. Exit 0
on success, 1 when the bundle gate fails, 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace-dir", type=Path, default=None, help="run workspace")
    parser.add_argument(
        "--run-id", action="append", default=[], help="run id to include (repeatable; default all)"
    )
    parser.add_argument("--output", type=Path, default=None, help="bundle directory")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty output directory")
    parser.add_argument("--zip", action="store_true", help="also write <output>.zip (byte-reproducible)")
    args = parser.parse_args(argv)

    from datetime import UTC, datetime

    from worldforge.cli.app import app

    command = ["runs", "bundle", *(args.run_id or ["--all"])]
    if args.workspace_dir is not None:
        command += ["--workspace-dir", str(args.workspace_dir)]
    if args.output is None and len(args.run_id) == 1:
        # The CLI files a single run under issue-bundles/<id>; this spelling keeps every bundle
        # under evidence-bundles/<UTC time> as the evaluation docs say.
        from worldforge.config import default_workspace_dir

        workspace = args.workspace_dir or default_workspace_dir()
        args.output = workspace / "evidence-bundles" / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    if args.output is not None:
        command += ["--output", str(args.output)]
    command += ["--overwrite"] * args.overwrite + ["--zip"] * args.zip
    app(args=command, prog_name="worldforge")  # exits with the command's code
    return 0


if __name__ == "__main__":
    sys.exit(main())
