"""Run workspaces: ``DIR/runs/<run-id>/`` with a manifest, a hash-chained event log, item records and
artifacts; plus listing, verification, diff and retention. See ``docs/architecture.md``."""

from worldforge.workspace.diff import diff_runs
from worldforge.workspace.ids import is_run_id, new_run_id, require_run_id
from worldforge.workspace.layout import DIGEST_RECIPE, MANIFEST_NAME, SCHEMA_VERSION, RunLock, load_manifest
from worldforge.workspace.prune import apply_prune, plan_prune
from worldforge.workspace.records import RunManifest, read_run_manifest
from worldforge.workspace.run import Run, RunInterrupted, optional_run, start_run
from worldforge.workspace.store import effective_status, list_runs, resolve_run_dir
from worldforge.workspace.verify import VerifyReport, verify_run

__all__ = [
    "DIGEST_RECIPE",
    "MANIFEST_NAME",
    "SCHEMA_VERSION",
    "Run",
    "RunInterrupted",
    "RunLock",
    "RunManifest",
    "VerifyReport",
    "apply_prune",
    "diff_runs",
    "effective_status",
    "is_run_id",
    "list_runs",
    "load_manifest",
    "new_run_id",
    "optional_run",
    "plan_prune",
    "read_run_manifest",
    "require_run_id",
    "resolve_run_dir",
    "start_run",
    "verify_run",
]
