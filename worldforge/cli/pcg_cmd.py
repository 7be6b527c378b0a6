"""``worldforge pcg``: the Science Birds level pipeline from the command line.

Single-file commands chain like the official scripts (``extract`` prints the intermediate program
byte for byte, ``convert`` the XML byte for byte, ``-`` reads stdin); a stage failure exits 1 with
the official message, bad usage exits 2. ``stage`` runs a whole competition folder. Heavy modules
(Box2D, numpy, Pillow) load only inside the command that needs them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from worldforge.cli._common import argv as _argv
from worldforge.cli._common import (
    check_format,
    cli_errors,
    format_option,
    legacy_workspace_option,
    workspace_choice,
    workspace_option,
)
from worldforge.core.digests import digest_bytes, digest_text
from worldforge.core.errors import GateFailure, StageError, WorldForgeError
from worldforge.core.io import atomic_write_bytes
from worldforge.workspace import Run, optional_run

if TYPE_CHECKING:
    from rich.progress import TaskID

    from worldforge.pcg.competition.orchestrate import StageRequest
    from worldforge.pcg.competition.records import StageRecord
    from worldforge.pcg.levels.level import Level
    from worldforge.pcg.sim.physics import StabilityResult

pcg_app = typer.Typer(
    name="pcg",
    help="Science Birds level pipeline: extract, convert, simulate, render, competition folder stages.",
    no_args_is_help=True,
    add_completion=False,
)

TEXT_JSON = ("text", "json")

_WORKSPACE_OPT = workspace_option("Record this invocation (inputs, outputs, digests) in a run workspace.")
_WORKSPACE_LEGACY = legacy_workspace_option("--run-workspace")
_RESUME_OPT = typer.Option(None, "--resume-run", hidden=True)


def _ws(workspace: Path | None, legacy: Path | None) -> Path | None:
    """The workspace given as ``--workspace`` or its older spelling ``--run-workspace``."""
    return workspace_choice(workspace, legacy, "--run-workspace")


def _read_input(path: str) -> tuple[bytes, str]:
    """File bytes (``-`` = stdin) and a display name."""

    if path == "-":
        return sys.stdin.buffer.read(), "<stdin>"
    p = Path(path)
    if not p.is_file():
        raise WorldForgeError(f"{path}: file not found.")
    return p.read_bytes(), str(p)


def _write_stdout(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _add_input(run: Run | None, name: str, path: str) -> None:
    if run is None:
        return
    if path == "-":
        return
    run.add_input_file(name, path)


@pcg_app.command("extract")
def extract_cmd(
    response: str = typer.Argument(..., help="LLM reply text file ('-' = stdin)."),
    explain: bool = typer.Option(False, "--explain", help="Also list dropped calls and why, on stderr."),
    fmt: str = format_option("text", TEXT_JSON, help="text (the official program text) or json."),
    workspace: Path | None = _WORKSPACE_OPT,
    run_workspace: Path | None = _WORKSPACE_LEGACY,
    resume_run: str | None = _RESUME_OPT,
) -> None:
    """Print the drop_block program exactly as the official extractor writes it."""
    with cli_errors():
        from worldforge.pcg.levels.extract import extract_code

        check_format(fmt, TEXT_JSON)
        ws = _ws(workspace, run_workspace)
        with optional_run(ws, "pcg-extract", _argv(), {"format": fmt}, resume_run) as run:
            _add_input(run, "response", response)
            data, _ = _read_input(response)
            ex = extract_code(data.decode("utf-8", errors="replace"))
            if explain or fmt == "text":
                for d in ex.dropped if explain else ():
                    print(f"dropped (line {d.line}): {d.text} - {d.reason}", file=sys.stderr)
                for note in ex.notes if explain else ():
                    print(f"note: {note}", file=sys.stderr)
            if run is not None:
                if ex.program is not None:
                    run.write_artifact("program.txt", ex.program, media_type="text/plain")
                run.complete(
                    {
                        "ok": ex.ok,
                        "error": ex.error,
                        "program_digest": digest_text(ex.program) if ex.program else None,
                    }
                )
            if fmt == "json":
                _write_stdout(json.dumps(ex.to_dict(), indent=2) + "\n")
                if not ex.ok:
                    raise typer.Exit(1)
                return
            if ex.program is None:
                raise StageError(ex.error or "Code not found.")
            _write_stdout(ex.program)


@pcg_app.command("convert")
def convert_cmd(
    program: str = typer.Argument(..., help="drop_block program file ('-' = stdin)."),
    workspace: Path | None = _WORKSPACE_OPT,
    run_workspace: Path | None = _WORKSPACE_LEGACY,
    resume_run: str | None = _RESUME_OPT,
) -> None:
    """Print the level XML exactly as the official converter writes it (no final newline)."""
    with cli_errors():
        from worldforge.pcg.levels.convert import convert

        with optional_run(_ws(workspace, run_workspace), "pcg-convert", _argv(), {}, resume_run) as run:
            _add_input(run, "program", program)
            data, _ = _read_input(program)
            try:
                xml = convert(data.decode("utf-8", errors="replace"))
            except StageError as exc:
                if run is not None:
                    run.complete({"ok": False, "error": str(exc)})
                raise
            if run is not None:
                run.write_artifact("level.xml", xml, media_type="application/xml")
                run.complete({"ok": True, "xml_digest": digest_text(xml)})
            _write_stdout(xml)


@pcg_app.command("simulate")
def simulate_cmd(
    level: str = typer.Argument(..., help="Level XML file ('-' = stdin)."),
    fmt: str = format_option("json", TEXT_JSON),
    trials: int = typer.Option(1, "--trials", min=1, help="Best-of-N runs, as the evaluator's trials."),
    details: bool = typer.Option(False, "--details", help="Include per-block start/final poses."),
    workspace: Path | None = _WORKSPACE_OPT,
    run_workspace: Path | None = _WORKSPACE_LEGACY,
    resume_run: str | None = _RESUME_OPT,
) -> None:
    """Box2D stability test: total/moving/destroyed blocks and stability."""
    with cli_errors():
        from worldforge.pcg.levels.level import parse_level_xml
        from worldforge.pcg.sim.physics import simulate

        check_format(fmt, TEXT_JSON)
        ws = _ws(workspace, run_workspace)
        with optional_run(ws, "pcg-simulate", _argv(), {"trials": trials}, resume_run) as run:
            _add_input(run, "level", level)
            data, name = _read_input(level)
            result = simulate(parse_level_xml(data, source=name), trials=trials)
            payload = result.to_dict()
            if not details:
                payload.pop("blocks")
            if run is not None:
                run.write_artifact(
                    "stability.json", json.dumps(result.to_dict(), indent=2), "application/json"
                )
                run.complete(payload)
            if fmt == "json":
                _write_stdout(json.dumps(payload, indent=2) + "\n")
            else:
                _write_stdout(
                    f"total_blocks {result.total_blocks}\nmoving_blocks {result.moving_blocks}\n"
                    f"destroyed_blocks {result.destroyed_blocks}\nstability {result.stability}\n"
                )


@pcg_app.command("render")
def render_cmd(
    level: str = typer.Argument(..., help="Level XML file ('-' = stdin)."),
    output: Path = typer.Option(..., "-o", "--output", help="PNG file to write."),
    no_simulate: bool = typer.Option(False, "--no-simulate", help="Render the level as written."),
    color: bool = typer.Option(False, "--color", help="Coloured render for people instead."),
    trials: int = typer.Option(1, "--trials", min=1, help="Stability trials before rendering."),
    workspace: Path | None = _WORKSPACE_OPT,
    run_workspace: Path | None = _WORKSPACE_LEGACY,
    resume_run: str | None = _RESUME_OPT,
) -> None:
    """Write the similarity image (1024x1024, black on white) after the 10 s simulation."""
    with cli_errors():
        import io

        from worldforge.pcg.levels.level import parse_level_xml
        from worldforge.pcg.sim.physics import simulate
        from worldforge.pcg.sim.render import render_color, render_png

        config = {"simulate": not no_simulate, "color": color, "trials": trials}
        with optional_run(_ws(workspace, run_workspace), "pcg-render", _argv(), config, resume_run) as run:
            _add_input(run, "level", level)
            data, name = _read_input(level)
            parsed = parse_level_xml(data, source=name)
            source: Level | StabilityResult = parsed if no_simulate else simulate(parsed, trials=trials)
            if color:
                buf = io.BytesIO()
                render_color(source, size=1024).save(buf, format="PNG")
                png = buf.getvalue()
            else:
                png = render_png(source)
            atomic_write_bytes(output, png)
            if run is not None:
                run.write_artifact("image.png", png, media_type="image/png")
                run.complete({"output": output.name, "png_digest": digest_bytes(png)})
            print(f"wrote {output}", file=sys.stderr)


class _RichProgress:
    """A rich progress bar: a :class:`worldforge.pcg.competition.stages.Progress` (and callable)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self._task: TaskID | None = None

    def __enter__(self) -> _RichProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def start(self, description: str, total: int) -> None:
        self._task = self._progress.add_task(description, total=total)

    def __call__(self, advance: int = 1) -> None:
        if self._task is not None:
            self._progress.advance(self._task, advance)


def _names(option: str, values: list[str] | None) -> list[str] | None:
    """``--option a,b --option c`` -> ``["a", "b", "c"]``; ``None`` when the option was not given."""

    if values is None:
        return None
    names: list[str] = []
    for value in values:
        for part in value.split(","):
            name = part.strip()
            if not name:
                raise WorldForgeError(f"{option}: empty name in {value!r}; separate names with commas.")
            names.append(name)
    return names


@pcg_app.command("stage")
def stage_cmd(
    stage: str = typer.Argument(
        ..., help="extract, convert, stability, images, similarity, diversity, score or all."
    ),
    source: Path = typer.Option(
        ..., "--source", "-s", help="Competition folder (<SOURCE>/<team>/<stage>/<C>/...)."
    ),
    workers: int | None = typer.Option(None, "--workers", min=1, help="Processes (default: all cores)."),
    physics_trials: int = typer.Option(
        1, "--physics-trials", min=1, help="Best-of-N stability runs per level."
    ),
    raw_images: bool = typer.Option(False, "--raw-images", help="Also write <base>_raw.png colour renders."),
    classifier: str | None = typer.Option(
        None, "--classifier", help="Similarity classifier (similarity stage)."
    ),
    trials: int = typer.Option(10, "--trials", min=1, help="Trials per character T (diversity, score)."),
    diversity_vector: str = typer.Option(
        "softmax", "--diversity-vector", help="softmax (2024) or embedding (2025, CLS token)."
    ),
    exact: bool = typer.Option(False, "--exact", help="Exact decimal scoring (score stage)."),
    models: list[str] | None = typer.Option(
        None,
        "--models",
        help="score: model sub-folders of SOURCE, each a competition folder; prompt scores are "
        "summed over models (2025). Comma-separated or repeated.",
    ),
    baselines: list[str] | None = typer.Option(
        None,
        "--baselines",
        help="score, all: programs that are baselines (listed, not ranked). Comma-separated or "
        "repeated. Default: folders named baseline*.",
    ),
    zero_shot: str | None = typer.Option(
        None,
        "--zero-shot",
        help="score, all: the zero-shot baseline the winner is compared with (default: baseline_zero_shot).",
    ),
    uncertainty_resamples: int | None = typer.Option(
        None,
        "--uncertainty-resamples",
        help="score, all: letter-bootstrap draws for result/ranking_uncertainty.json "
        "(default 10000; 0 turns it off).",
    ),
    uncertainty_seed: int | None = typer.Option(
        None,
        "--uncertainty-seed",
        help="score, all: the bootstrap's seed (default 2029; recorded in the file).",
    ),
    executor: str = typer.Option(
        "local", "--executor", help="Where levels are simulated: local (process pool) or ray (a Ray cluster)."
    ),
    ray_address: str | None = typer.Option(
        None,
        "--ray-address",
        help="Ray cluster address (default: RAY_ADDRESS, else a private local cluster).",
    ),
    workspace: Path | None = _WORKSPACE_OPT,
    run_workspace: Path | None = _WORKSPACE_LEGACY,
    resume_run: str | None = _RESUME_OPT,
) -> None:
    """Run a competition folder stage; failed trials are logged and skipped, never abort the stage."""
    with cli_errors():
        from worldforge.pcg.competition.orchestrate import StageRequest

        request = StageRequest(
            stage=stage,
            source=str(source),
            workers=workers,
            physics_trials=physics_trials,
            raw_images=raw_images,
            classifier=classifier,
            trials=trials,
            diversity_vector=diversity_vector,
            exact=exact,
            models=_names("--models", models),
            baselines=_names("--baselines", baselines),
            zero_shot=zero_shot,
            uncertainty_resamples=uncertainty_resamples,
            uncertainty_seed=uncertainty_seed,
            executor=executor,
            ray_address=ray_address,
        )
        run_stage_request(request, _ws(workspace, run_workspace), _argv(), resume_run)


def run_stage_request(
    request: StageRequest, workspace: Path | None, argv: list[str], resume_run: str | None = None
) -> list[StageRecord]:
    """Run ``request`` (recorded in ``workspace`` when given, resuming ``resume_run``), print each
    stage's counts on stderr and the stage reports on stdout; ``pcg stage`` and ``runs resume``
    both come here."""
    from worldforge.pcg.competition.orchestrate import STAGE_KIND, prepare_stage, run_stages, stage_executor

    opts, config = prepare_stage(request)  # every check before a run or an executor exists
    source = Path(request.source)
    with (
        stage_executor(request.executor, request.ray_address, request.workers) as pool,
        optional_run(workspace, STAGE_KIND, argv, config, resume_run, request=request.to_record()) as run,
    ):
        with _RichProgress() as progress:
            results = run_stages(request.stage, source, opts, progress, run, executor=pool)
    for rep in results:
        if "succeeded" in rep:
            print(
                f"{rep['stage']}: {rep['succeeded']} succeeded, {rep['failed']} failed"
                + (f" (log: {source / log})" if (log := rep.get("log")) else ""),
                file=sys.stderr,
            )
    _write_stdout(json.dumps(results, indent=2, default=str) + "\n")
    return results


QUALIFY_FORMATS = ("table", "json")


@pcg_app.command("qualify")
def qualify_cmd(
    source: Path = typer.Argument(
        ..., help="Competition folder or .zip of team folders, or one team's folder."
    ),
    fmt: str = format_option("table", QUALIFY_FORMATS, help="table, or json (a list, one object per team)."),
    fail_on_unqualified: bool = typer.Option(
        False, "--fail-on-unqualified", help="Exit 1 when any team is not qualified."
    ),
) -> None:
    """Which teams' programs may be run, by the competition's rules (static: nothing is executed)."""
    with cli_errors():
        from worldforge.pcg.programs.qualify import qualify_source

        check_format(fmt, QUALIFY_FORMATS)
        results, ignored = qualify_source(source)
        for entry in ignored:
            print(f"ignored: {entry}", file=sys.stderr)
        if fmt == "json":
            _write_stdout(json.dumps([q.to_dict() for q in results], indent=2) + "\n")
        else:
            from rich.console import Console
            from rich.markup import escape
            from rich.table import Table

            table = Table(title=f"Qualification ({len(results)} teams)")
            for column in ("team", "qualified", "package", "entry", "why not / notes"):
                table.add_column(column)
            for q in results:
                why = [escape(r) for r in q.reasons] + [f"[dim]note: {escape(n)}[/dim]" for n in q.notes]
                table.add_row(
                    escape(q.team), "yes" if q.qualified else "[bold]no[/bold]", q.package or "-",
                    escape(q.entry or "-"), "\n".join(why) or "-",
                )  # fmt: skip
            Console(width=200).print(table)
        passed = sum(q.qualified for q in results)
        print(f"{passed} of {len(results)} teams qualified", file=sys.stderr)
        if fail_on_unqualified and passed < len(results):
            raise GateFailure(
                f"{len(results) - passed} of {len(results)} teams are not qualified (--fail-on-unqualified)."
            )


def register(app: typer.Typer) -> None:
    """Attach ``worldforge pcg`` (and ``pcg classify`` when that module is installed)."""
    import importlib

    try:
        measure = importlib.import_module("worldforge.cli.pcg_measure_cmd")
    except ModuleNotFoundError as exc:
        if exc.name != "worldforge.cli.pcg_measure_cmd":
            raise
    else:
        measure.register_measure(pcg_app)
    app.add_typer(pcg_app, name="pcg")


__all__ = ["pcg_app", "register", "run_stage_request"]
