"""``worldforge eval``, ``worldforge suites list`` and ``worldforge providers list``.

``eval`` resolves the suite (built-in, registered, entry point or ``module:attr``), checks every
provider's capabilities before anything runs, renders the chosen format to stdout or ``--output``
and, with ``--run-workspace``, records the run (items, provider events, every report format,
summary) and prints the run id and the HTML report path to stderr. ``--fail-on-failure`` turns any
failed scenario into exit code 1; bad suite/provider/capability names exit 2 with a hint.

Only typer is imported at module level so ``worldforge --help`` stays fast.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from worldforge.cli._common import argv as _argv
from worldforge.cli._common import cli_errors, fail

FORMATS = ("markdown", "json", "csv", "html")
EVAL_HINT = "list suites with `worldforge suites list` and providers with `worldforge providers list`."
_HINT_WORDS = ("suite", "provider", "capabilit")


def _eval_hint(message: str) -> str | None:
    """The listing hint only for errors about suites, providers or capabilities."""
    lowered = message.lower()
    return EVAL_HINT if any(word in lowered for word in _HINT_WORDS) else None


suites_app = typer.Typer(name="suites", help="Evaluation suites.", no_args_is_help=True, add_completion=False)
providers_app = typer.Typer(name="providers", help="Providers.", no_args_is_help=True, add_completion=False)


def _typed_options(
    programs: list[str] | None,
    trials: int | None,
    characters: str | None,
    classifier: str | None,
    workers: int | None,
    diversity_vector: str | None,
    ollama_host: str | None,
    seed: int | None,
    openai_base_url: str | None = None,
) -> dict[str, Any]:
    """Suite options exactly as typed: an option the user did not give is not passed at all."""
    from worldforge.core.errors import WorldForgeError

    options: dict[str, Any] = {}
    if programs:
        options["programs"] = list(programs)
    for key, value in (
        ("trials", trials),
        ("characters", characters),
        ("classifier", classifier),
        ("workers", workers),
        ("diversity_vector", diversity_vector),
        ("ollama_host", ollama_host),
        ("openai_base_url", openai_base_url),
        ("seed", seed),
    ):
        if value is not None:
            if isinstance(value, str) and not value.strip():
                # `--characters ""` is a slip (an unset shell variable), not a request for defaults
                raise WorldForgeError(f"--{key.replace('_', '-')}: must not be empty.")
            options[key] = value
    if programs and any(not p.strip() for p in programs):
        raise WorldForgeError("--program: must not be empty.")
    return options


#: Suite options whose values may be local paths (a classifier checkpoint, prompt-program folders).
PATH_OPTIONS = ("classifier", "programs")


def _cwd_relative_paths(options: dict[str, Any]) -> dict[str, Any]:
    """Absolute path options naming something inside the current directory, made relative to it.

    The options are part of the input digest and come back as flags in the failure gallery's rerun
    command, which is recorded relative to the current directory (the sanitizer strips it). Passing
    the relative form to the suite as well means the rerun reproduces the input digest, and a report
    does not depend on whether ``--classifier`` was typed as ``model`` or ``$PWD/model``.
    """
    from worldforge.workspace.layout import cwd_relative

    def relative(value: Any) -> Any:
        if isinstance(value, str) and Path(value).is_absolute() and Path(value).exists():
            return cwd_relative(value) or value
        return value

    out = dict(options)
    for key in PATH_OPTIONS:
        if isinstance(out.get(key), list):
            out[key] = [relative(v) for v in out[key]]
        elif key in out:
            out[key] = relative(out[key])
    return out


def _default_workspace() -> Path | None:
    try:
        from worldforge.config import default_run_workspace
    except ImportError:
        return None
    return default_run_workspace()


@contextlib.contextmanager
def _maybe_run(workspace: Path | None, config: dict[str, Any], resume: str | None) -> Iterator[Any]:
    from worldforge.core.errors import WorldForgeError

    if workspace is None:
        if resume:
            raise WorldForgeError("--resume-run needs --run-workspace.")
        yield None
        return
    try:
        from worldforge.workspace import start_run
    except ImportError:
        raise WorldForgeError(
            "--run-workspace: run workspaces are not available in this installation."
        ) from None
    with start_run(workspace, kind="evaluation", argv=_argv(), config=config, resume_run_id=resume) as run:
        yield run


def _with_replay(
    options: dict[str, Any], replay: str | None, suite: str, workspace: Path | None
) -> dict[str, Any] | None:
    """The suite's options plus the recorded run ``--replay`` answers from. The run's own config
    keeps the options without it, so a replay has the same inputs as the run it replays."""
    if replay is None:
        return options or None
    from worldforge.core.errors import WorldForgeError
    from worldforge.gateway import open_replay

    if suite != "science-birds":
        raise WorldForgeError(
            f"--replay: only science-birds evaluations record model exchanges, not {suite!r}."
        )
    return {**options, "replay": open_replay(workspace, replay)}


def summary_payload(report: Any) -> dict[str, Any]:
    """``results/summary.json``: counts and digests only (no run id, no timestamps), so identical
    reruns produce byte-identical summaries."""
    prov = report.provenance
    return {
        "schema_version": 1,
        "suite_id": report.suite_id,
        "suite": report.suite,
        "suite_version": report.suite_version,
        "providers": [s.provider for s in report.provider_summaries],
        "passed": report.passed,
        "result_count": len(report.results),
        "passed_count": sum(1 for r in report.results if r.passed),
        "failed_count": len(report.failed_results),
        "provider_summaries": [s.to_dict() for s in report.provider_summaries],
        "input_digest": prov.input_digest if prov else None,
        "result_digest": prov.result_digest if prov else None,
        "event_count": prov.event_count if prov else 0,
        "claim_boundary": report.claim_boundary,
    }


def _write_run_artifacts(run: Any, report: Any) -> Path:
    from worldforge.core.canonical import pretty_json
    from worldforge.evaluation import result_payload
    from worldforge.reports import EXTENSIONS, MEDIA_TYPES

    artifacts = report.artifacts()
    for fmt in ("json", "markdown", "csv", "html"):
        run.write_artifact(f"reports/report.{EXTENSIONS[fmt]}", artifacts[fmt], MEDIA_TYPES[fmt])
    run.write_artifact("reports/failure_gallery.json", artifacts["failure_gallery.json"], "application/json")
    run.write_artifact("reports/failure_gallery.md", artifacts["failure_gallery.md"], "text/markdown")
    for relpath, blob in sorted(report.extra_artifacts.items()):
        run.write_artifact(relpath, blob)
    run.write_artifact("results/summary.json", pretty_json(summary_payload(report)), "application/json")
    run.complete(result_payload(report), claim_boundary=report.claim_boundary)
    return Path(run.dir) / "reports" / "report.html"


def eval_command(
    suite: str = typer.Option(
        "physics", "--suite", help="Suite name (see `suites list`) or module:attr factory."
    ),
    provider: list[str] = typer.Option(
        None,
        "--provider",
        help="Provider name, e.g. mock, mock:v2, ollama:qwen2.5, openai:qwen2.5 (repeatable).",
    ),
    fmt: str = typer.Option("markdown", "--format", help="markdown | json | csv | html."),
    output: Path | None = typer.Option(None, "--output", help="Write the report to FILE instead of stdout."),
    fail_on_failure: bool = typer.Option(False, "--fail-on-failure", help="Exit 1 when any scenario failed."),
    dataset_manifest: list[Path] = typer.Option(
        None, "--dataset-manifest", help="Cite a dataset manifest in provenance (repeatable)."
    ),
    run_workspace: Path | None = typer.Option(
        None, "--run-workspace", help="Record the run under DIR/runs/<run-id>/ (default from config)."
    ),
    resume_run: str | None = typer.Option(None, "--resume-run", hidden=True),
    program: list[str] = typer.Option(
        None, "--program", help="science-birds: prompt program DIR or submission DIR/FILE.py (repeatable)."
    ),
    trials: int | None = typer.Option(None, "--trials", help="science-birds: trials per letter."),
    characters: str | None = typer.Option(
        None, "--characters", help="science-birds: letters, e.g. A-Z or A,C,E."
    ),
    classifier: str | None = typer.Option(None, "--classifier", help="science-birds: classifier id or DIR."),
    workers: int | None = typer.Option(None, "--workers", help="science-birds: parallel workers."),
    diversity_vector: str | None = typer.Option(
        None, "--diversity-vector", help="science-birds: softmax | embedding."
    ),
    ollama_host: str | None = typer.Option(None, "--ollama-host", help="science-birds: Ollama server URL."),
    seed: int | None = typer.Option(None, "--seed", help="science-birds: master seed."),
    openai_base_url: str | None = typer.Option(
        None,
        "--openai-base-url",
        help="science-birds: OpenAI-compatible server URL for openai:MODEL, e.g. http://127.0.0.1:11434/v1.",
    ),
    replay: str | None = typer.Option(
        None,
        "--replay",
        metavar="RUN_ID",
        help="science-birds: answer every model request from RUN_ID's recorded exchanges "
        "(in --run-workspace) instead of asking the model.",
    ),
    no_install: bool = typer.Option(
        False,
        "--no-install",
        help="science-birds: run submissions in the current environment (ignore requirements.txt).",
    ),
    sandbox: str | None = typer.Option(
        None, "--sandbox", help="science-birds submissions: auto | bubblewrap | process (default auto)."
    ),
) -> None:
    """Run an evaluation suite against one or more providers and print the report."""
    with cli_errors(hint=_eval_hint):
        from worldforge.core.errors import GateFailure, WorldForgeError
        from worldforge.evaluation import EvaluationSuite
        from worldforge.forge import WorldForge
        from worldforge.reports import render_report

        fmt = {"md": "markdown"}.get(fmt, fmt)  # the spelling benchmark, runs diff and bundles use
        if fmt not in FORMATS:
            raise WorldForgeError(f"--format: {fmt!r} is not one of {', '.join(FORMATS)} (or md).")
        providers = list(provider or ["mock"])
        typed = _typed_options(
            program,
            trials,
            characters,
            classifier,
            workers,
            diversity_vector,
            ollama_host,
            seed,
            openai_base_url,
        )
        if no_install:
            typed["no_install"] = True
        if sandbox is not None:
            typed["sandbox"] = sandbox
        options = _cwd_relative_paths(typed)
        workspace = run_workspace if run_workspace is not None else _default_workspace()
        evaluation = EvaluationSuite.from_reference(suite, _with_replay(options, replay, suite, workspace))
        manifests = [str(p) for p in dataset_manifest or []]
        config = {"suite": suite, "providers": providers, "options": options, "dataset_manifests": manifests}
        html_path: Path | None = None
        forge = WorldForge()
        evaluation.check_providers(providers, forge)  # capability gate before a run is even created
        with _maybe_run(workspace, config, resume_run) as run:
            if run is not None:
                forge.add_event_sink(run.event_sink)  # provider events -> the run's events.jsonl
            report = evaluation.run_report(
                providers, forge=forge, dataset_manifests=manifests, run=run, command=_argv()
            )
            if run is not None:
                html_path = _write_run_artifacts(run, report)
        rendered = render_report(report.to_dict(), fmt)
        if output is not None:
            from worldforge.core.io import atomic_write_text

            atomic_write_text(output, rendered)
            print(f"wrote {output}", file=sys.stderr)
        else:
            sys.stdout.write(rendered if rendered.endswith("\n") else rendered + "\n")
            sys.stdout.flush()
        if run is not None:
            print(f"run {run.run_id} completed: {html_path}", file=sys.stderr)
        failed = len(report.failed_results)
        if fail_on_failure and failed:
            raise fail(
                f"{failed} of {len(report.results)} scenario result(s) failed in suite '{report.suite_id}' "
                "(--fail-on-failure).",
                code=GateFailure.exit_code,
                hint="the report's failure gallery lists each failed case with a rerun command.",
            )


def _print_table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    Console().print(table)


def _check_format(fmt: str) -> None:
    from worldforge.core.errors import WorldForgeError

    if fmt not in ("table", "json"):
        raise WorldForgeError(f"--format: {fmt!r} is not one of table, json.")


@suites_app.command("list")
def suites_list(fmt: str = typer.Option("table", "--format", help="table | json.")) -> None:
    """List evaluation suites (built-in, registered and entry points)."""
    with cli_errors():
        from worldforge.core.canonical import pretty_json
        from worldforge.evaluation import EvaluationSuite

        _check_format(fmt)
        builtin = EvaluationSuite.builtin_descriptions()
        rows = [{"name": name, "source": "builtin", "description": desc} for name, desc in builtin.items()]
        rows += [
            {"name": name, "source": "registered/entry-point", "description": ""}
            for name in EvaluationSuite.registered_names()
            if name not in builtin
        ]
        if fmt == "json":
            sys.stdout.write(pretty_json({"suites": rows}))
            return
        _print_table("Evaluation suites", ["name", "source", "description"], [list(r.values()) for r in rows])


@providers_app.command("list")
def providers_list(fmt: str = typer.Option("table", "--format", help="table | json.")) -> None:
    """List provider families and their capabilities."""
    with cli_errors():
        from worldforge.core.canonical import pretty_json
        from worldforge.providers.registry import ProviderRegistry

        _check_format(fmt)
        infos = [info.to_dict() for info in ProviderRegistry().infos()]
        if fmt == "json":
            sys.stdout.write(pretty_json({"providers": infos}))
            return
        rows = [
            [
                i["name"] + (":<arg>" if i["argument"] == "required" else ""),
                i["source"],
                ", ".join(i["capabilities"]) if i["capabilities"] is not None else "?",
                i["description"],
            ]
            for i in infos
        ]
        _print_table("Providers", ["name", "source", "capabilities", "description"], rows)


def register(app: typer.Typer) -> None:
    """Attach ``eval``, ``suites`` and ``providers`` to the root app."""
    app.command("eval")(eval_command)
    app.add_typer(suites_app, name="suites")
    app.add_typer(providers_app, name="providers")


__all__ = ["eval_command", "register", "summary_payload"]
