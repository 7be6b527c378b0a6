"""``worldforge eval``, ``worldforge suites list`` and ``worldforge providers list``.

``eval`` resolves the suite (built-in, registered, entry point or ``module:attr``), checks every
provider's capabilities before anything runs, renders the chosen format to stdout (from the
sanitized report payload, since terminals end up in CI logs) or ``--output`` and, with
``--workspace``, records the run (items, provider events, every report format, summary) and
prints the run id and the HTML report path to stderr. ``--fail-on-failure`` turns any
failed scenario into exit code 1; bad suite/provider/capability names exit 2 with a hint.

Only typer is imported at module level so ``worldforge --help`` stays fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from worldforge.cli._common import argv as _argv
from worldforge.cli._common import (
    check_format,
    cli_errors,
    fail,
    format_option,
    legacy_workspace_option,
    workspace_choice,
    workspace_option,
)
from worldforge.core.canonical import pretty_json
from worldforge.core.errors import GateFailure, WorldForgeError
from worldforge.core.io import atomic_write_text
from worldforge.core.redact import sanitize_value

if TYPE_CHECKING:  # imported where it is used: ``worldforge --help`` stays fast
    from worldforge.evidence.keys import SigningKey

FORMATS = ("markdown", "json", "csv", "html")
LIST_FORMATS = ("table", "json")
EVAL_HINT = "list suites with `worldforge suites list` and providers with `worldforge providers list`."
_HINT_WORDS = ("suite", "provider", "capabilit")


def _eval_hint(message: str) -> str | None:
    """The listing hint only for errors about suites, providers or capabilities (a bad
    ``--suite-option`` already names the suite's options in its one line)."""
    lowered = message.lower()
    if lowered.startswith("--suite-option"):
        return None
    return EVAL_HINT if any(word in lowered for word in _HINT_WORDS) else None


suites_app = typer.Typer(name="suites", help="Evaluation suites.", no_args_is_help=True, add_completion=False)
providers_app = typer.Typer(name="providers", help="Providers.", no_args_is_help=True, add_completion=False)


def _one_or_many(values: list[str] | None) -> str | list[str] | None:
    """A repeatable server option: one server stays a string (the options of a one-server run are
    what they always were), several become a list."""
    if not values:
        return None
    return values[0] if len(values) == 1 else list(values)


def _typed_options(
    programs: list[str] | None,
    trials: int | None,
    characters: str | None,
    classifier: str | None,
    workers: int | None,
    diversity_vector: str | None,
    ollama_host: list[str] | None,
    seed: int | None,
    openai_base_url: list[str] | None = None,
    executor: str | None = None,
    ray_address: str | None = None,
    max_connections: int | None = None,
) -> dict[str, object]:
    """Suite options exactly as typed: an option the user did not give is not passed at all."""

    options: dict[str, object] = {}
    if programs:
        options["programs"] = list(programs)
    for key, value in (
        ("trials", trials),
        ("characters", characters),
        ("classifier", classifier),
        ("workers", workers),
        ("diversity_vector", diversity_vector),
        ("ollama_host", _one_or_many(ollama_host)),
        ("openai_base_url", _one_or_many(openai_base_url)),
        ("seed", seed),
        ("executor", executor),
        ("ray_address", ray_address),
        ("max_connections", max_connections),
    ):
        if value is not None:
            if any(
                isinstance(v, str) and not v.strip() for v in (value if isinstance(value, list) else [value])
            ):
                # `--characters ""` is a slip (an unset shell variable), not a request for defaults
                raise WorldForgeError(f"--{key.replace('_', '-')}: must not be empty.")
            options[key] = value
    if programs and any(not p.strip() for p in programs):
        raise WorldForgeError("--program: must not be empty.")
    return options


def _default_workspace() -> Path | None:
    from worldforge.config import default_run_workspace

    return default_run_workspace()


def _signer(attest: bool, sign_key: Path | None, workspace: Path | None) -> SigningKey | None:
    """The signing key for ``--attest`` (``None``: unsigned), checked before anything runs."""
    if sign_key is not None and not attest:
        raise WorldForgeError("a signing key (--sign-key) needs --attest as well.")
    if not attest:
        return None
    if workspace is None:
        raise WorldForgeError("--attest: attests a recorded run; give --workspace DIR.")
    from worldforge.evidence.keys import load_signing_key

    return load_signing_key(sign_key) if sign_key is not None else None


def _attest_run(workspace: Path, run_id: str, signer: SigningKey | None) -> None:
    """Attest the run ``evaluate`` just finished, where it lies (the outcome names it)."""
    from worldforge.evidence.attest import attest_run
    from worldforge.workspace.store import resolve_run_dir

    target = attest_run(resolve_run_dir(workspace, run_id), signer)
    print(f"attestation: {target.name} ({'signed' if signer is not None else 'unsigned'})", file=sys.stderr)


def eval_command(
    suite: str = typer.Option(
        "physics", "--suite", help="Suite name (see `suites list`) or module:attr factory."
    ),
    provider: list[str] = typer.Option(
        None,
        "--provider",
        help="Provider name, e.g. mock, mock:v2, ollama:qwen2.5, openai:qwen2.5 (repeatable).",
    ),
    fmt: str = format_option("markdown", (*FORMATS, "md"), help="Report format (md = markdown)."),
    output: Path | None = typer.Option(None, "--output", help="Write the report to FILE instead of stdout."),
    fail_on_failure: bool = typer.Option(False, "--fail-on-failure", help="Exit 1 when any scenario failed."),
    dataset_manifest: list[Path] = typer.Option(
        None, "--dataset-manifest", help="Cite a dataset manifest in provenance (repeatable)."
    ),
    workspace: Path | None = workspace_option(
        "Record the run under DIR/runs/<run-id>/ (default from config)."
    ),
    run_workspace: Path | None = legacy_workspace_option("--run-workspace"),
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
    ollama_host: list[str] | None = typer.Option(
        None,
        "--ollama-host",
        help="science-birds: Ollama server URL; repeat for several servers of the same models.",
    ),
    seed: int | None = typer.Option(None, "--seed", help="science-birds: master seed."),
    openai_base_url: list[str] | None = typer.Option(
        None,
        "--openai-base-url",
        help="science-birds: OpenAI-compatible server URL for openai:MODEL, e.g. http://127.0.0.1:11434/v1; "
        "repeat for several servers of the same models.",
    ),
    max_connections: int | None = typer.Option(
        None,
        "--max-connections",
        min=1,
        help="science-birds: requests in flight per model server (default 4; trials run as many at "
        "once as all servers take); a failing server is left out for a while and its requests go to "
        "the others.",
    ),
    executor: str | None = typer.Option(
        None,
        "--executor",
        help="science-birds: where level stages run: local (default) or ray (also classifies in "
        "one classifier actor per node).",
    ),
    ray_address: str | None = typer.Option(
        None, "--ray-address", help="science-birds: Ray cluster address (default: RAY_ADDRESS)."
    ),
    replay: str | None = typer.Option(
        None,
        "--replay",
        metavar="RUN_ID",
        help="science-birds: answer every model request from RUN_ID's recorded exchanges "
        "(in --workspace) instead of asking the model.",
    ),
    no_install: bool = typer.Option(
        False,
        "--no-install",
        help="science-birds: run submissions in the current environment (ignore requirements.txt).",
    ),
    sandbox: str | None = typer.Option(
        None, "--sandbox", help="science-birds submissions: auto | bubblewrap | process (default auto)."
    ),
    keep_unserved_replies: bool = typer.Option(
        False,
        "--keep-unserved-replies",
        help="science-birds submissions: score a reply the model never served (hard-coded or edited "
        "text) instead of 0; the rules forbid changing the reply.",
    ),
    programs_field: list[str] | None = typer.Option(
        None,
        "--programs",
        metavar="DIR|ZIP",
        help="science-birds: every team folder of DIR or a .zip, qualified first (see pcg qualify); "
        "teams that do not qualify are reported, not run.",
    ),
    run_unqualified: bool = typer.Option(
        False,
        "--run-unqualified",
        help="science-birds submissions: run teams that fail the static qualification checks too.",
    ),
    wheelhouse: str | None = typer.Option(
        None,
        "--wheelhouse",
        metavar="DIR",
        help="science-birds submissions: a folder of wheels to install requirements.txt from.",
    ),
    uncertainty_resamples: int | None = typer.Option(
        None,
        "--uncertainty-resamples",
        metavar="N",
        help="science-birds: letter draws of the ranking's 95 % intervals (default 10000; 0: off).",
    ),
    uncertainty_seed: int | None = typer.Option(
        None,
        "--uncertainty-seed",
        metavar="S",
        help="science-birds: seed of those letter draws (default 2029).",
    ),
    max_run_tokens: int | None = typer.Option(
        None,
        "--max-run-tokens",
        metavar="N",
        min=1,
        help="science-birds: stop generation before the run's prompt+completion tokens (the "
        "gateway's count) would pass N; the items done are kept and `runs resume` finishes the run.",
    ),
    suite_option: list[str] | None = typer.Option(
        None,
        "--suite-option",
        metavar="KEY=VALUE",
        help="Any suite option by its key (repeatable), checked against the options the suite "
        "declares; the suite flags above are aliases (--trials 3 is trials=3).",
    ),
    attest: bool = typer.Option(
        False,
        "--attest",
        help="Attest the finished run in place (attestations.intoto.jsonl; needs --workspace).",
    ),
    sign_key: Path | None = typer.Option(
        None, "--sign-key", help="Ed25519 or ECDSA P-256 private key (PEM) that signs --attest."
    ),
) -> None:
    """Run an evaluation suite against one or more providers and print the report."""
    with cli_errors(hint=_eval_hint):
        from worldforge.evaluation.runner import EvaluationRequest, evaluate
        from worldforge.reports import render_report

        # ``md`` is the spelling benchmark, runs diff and bundles use
        fmt = {"md": "markdown"}.get(check_format(fmt, (*FORMATS, "md")), fmt)
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
            executor,
            ray_address,
            max_connections,
        )
        if no_install:
            typed["no_install"] = True
        if sandbox is not None:
            typed["sandbox"] = sandbox
        if keep_unserved_replies:
            typed["keep_unserved_replies"] = True
        if programs_field:
            typed["field"] = list(programs_field)
        if run_unqualified:
            typed["run_unqualified"] = True
        if wheelhouse is not None:  # the suite checks the folder exists
            if not wheelhouse.strip():
                raise WorldForgeError("--wheelhouse: must not be empty.")
            typed["wheelhouse"] = str(Path(wheelhouse).expanduser().resolve())
        if uncertainty_resamples is not None:  # the suite checks the range
            typed["uncertainty_resamples"] = uncertainty_resamples
        if uncertainty_seed is not None:
            typed["uncertainty_seed"] = uncertainty_seed
        if max_run_tokens is not None:
            typed["max_run_tokens"] = max_run_tokens
        run_workspace_dir = (
            workspace_choice(workspace, run_workspace, "--run-workspace") or _default_workspace()
        )
        signer = _signer(attest, sign_key, run_workspace_dir)  # before the run: a bad key writes nothing
        outcome = evaluate(
            EvaluationRequest(
                suite=suite,
                providers=list(provider or ["mock"]),
                options=typed,
                suite_options=list(suite_option or []),
                dataset_manifests=[str(p) for p in dataset_manifest or []],
                workspace=run_workspace_dir,
                resume_run=resume_run,
                replay=replay,
                argv=_argv(),
            )
        )
        report = outcome.report
        if output is not None:  # a file the user asked for, like the run's own reports: kept whole
            atomic_write_text(output, render_report(report.to_dict(), fmt))
            print(f"wrote {output}", file=sys.stderr)
        else:  # terminals end up in CI logs: printed from the sanitized payload, as bundles render
            rendered = render_report(sanitize_value(report.to_dict()), fmt)
            sys.stdout.write(rendered if rendered.endswith("\n") else rendered + "\n")
            sys.stdout.flush()
        if outcome.run_id is not None:  # where to open it on this machine: the path is the message
            print(f"run {outcome.run_id} completed: {outcome.html_path}", file=sys.stderr)
        if attest and outcome.run_id is not None and run_workspace_dir is not None:
            _attest_run(run_workspace_dir, outcome.run_id, signer)
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


@suites_app.command("list")
def suites_list(fmt: str = format_option("table", LIST_FORMATS)) -> None:
    """List evaluation suites (built-in, registered and entry points)."""
    with cli_errors():
        from worldforge.evaluation import EvaluationSuite

        check_format(fmt, LIST_FORMATS)
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
def providers_list(fmt: str = format_option("table", LIST_FORMATS)) -> None:
    """List provider families and their capabilities."""
    with cli_errors():
        from worldforge.providers.registry import ProviderRegistry

        check_format(fmt, LIST_FORMATS)
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


__all__ = ["eval_command", "register"]
