"""``worldforge pcg``: the Science Birds level pipeline from the command line.

Single-file commands chain like the official scripts (``extract`` prints the intermediate program
byte for byte, ``convert`` the XML byte for byte, ``-`` reads stdin); a stage failure exits 1 with
the official message, bad usage exits 2. ``stage`` runs a whole competition folder. Heavy modules
(Box2D, numpy, Pillow) load only inside the command that needs them.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from worldforge.cli._common import argv as _argv
from worldforge.cli._common import cli_errors

pcg_app = typer.Typer(
    name="pcg",
    help="Science Birds level pipeline: extract, convert, simulate, render, competition folder stages.",
    no_args_is_help=True,
    add_completion=False,
)

STAGE_NAMES = ("extract", "convert", "stability", "images", "similarity", "diversity", "score", "all")
ALL_ORDER = ("extract", "convert", "stability", "images", "similarity", "diversity", "score")

_WORKSPACE_OPT = typer.Option(
    None, "--run-workspace", help="Record this invocation (inputs, outputs, digests) in a run workspace."
)
_RESUME_OPT = typer.Option(None, "--resume-run", hidden=True)


def _read_input(path: str) -> tuple[bytes, str]:
    """File bytes (``-`` = stdin) and a display name."""
    from worldforge.core.errors import WorldForgeError

    if path == "-":
        return sys.stdin.buffer.read(), "<stdin>"
    p = Path(path)
    if not p.is_file():
        raise WorldForgeError(f"{path}: file not found.")
    return p.read_bytes(), str(p)


def _write_stdout(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


@contextlib.contextmanager
def _run_context(
    workspace: Path | None, kind: str, config: dict[str, Any], resume: str | None
) -> Iterator[Any]:
    """A run-workspace run when ``--run-workspace`` is given, else ``None``."""
    if workspace is None:
        if resume:
            from worldforge.core.errors import WorldForgeError

            raise WorldForgeError("--resume-run needs --run-workspace.")
        yield None
        return
    try:
        from worldforge.workspace import start_run
    except ImportError:
        from worldforge.core.errors import WorldForgeError

        raise WorldForgeError(
            "--run-workspace: run workspaces are not available in this installation."
        ) from None
    with start_run(workspace, kind=kind, argv=_argv(), config=config, resume_run_id=resume) as run:
        yield run


def _add_input(run: Any, name: str, path: str) -> None:
    if run is None:
        return
    if path == "-":
        return
    run.add_input_file(name, path)


@pcg_app.command("extract")
def extract_cmd(
    response: str = typer.Argument(..., help="LLM reply text file ('-' = stdin)."),
    explain: bool = typer.Option(False, "--explain", help="Also list dropped calls and why, on stderr."),
    fmt: str = typer.Option("text", "--format", help="text (the official program text) or json."),
    run_workspace: Path | None = _WORKSPACE_OPT,
    resume_run: str | None = _RESUME_OPT,
) -> None:
    """Print the drop_block program exactly as the official extractor writes it."""
    with cli_errors():
        from worldforge.core.digests import digest_text
        from worldforge.core.errors import StageError, WorldForgeError
        from worldforge.pcg.levels.extract import extract_code

        if fmt not in ("text", "json"):
            raise WorldForgeError(f"--format must be text or json, got {fmt!r}.")
        with _run_context(run_workspace, "pcg-extract", {"format": fmt}, resume_run) as run:
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
    run_workspace: Path | None = _WORKSPACE_OPT,
    resume_run: str | None = _RESUME_OPT,
) -> None:
    """Print the level XML exactly as the official converter writes it (no final newline)."""
    with cli_errors():
        from worldforge.core.digests import digest_text
        from worldforge.core.errors import StageError
        from worldforge.pcg.levels.convert import convert

        with _run_context(run_workspace, "pcg-convert", {}, resume_run) as run:
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
    fmt: str = typer.Option("json", "--format", help="json or text."),
    trials: int = typer.Option(1, "--trials", min=1, help="Best-of-N runs, as the evaluator's trials."),
    details: bool = typer.Option(False, "--details", help="Include per-block start/final poses."),
    run_workspace: Path | None = _WORKSPACE_OPT,
    resume_run: str | None = _RESUME_OPT,
) -> None:
    """Box2D stability test: total/moving/destroyed blocks and stability."""
    with cli_errors():
        from worldforge.core.errors import WorldForgeError
        from worldforge.pcg.levels.level import parse_level_xml
        from worldforge.pcg.sim.physics import simulate

        if fmt not in ("text", "json"):
            raise WorldForgeError(f"--format must be text or json, got {fmt!r}.")
        with _run_context(run_workspace, "pcg-simulate", {"trials": trials}, resume_run) as run:
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
    run_workspace: Path | None = _WORKSPACE_OPT,
    resume_run: str | None = _RESUME_OPT,
) -> None:
    """Write the similarity image (1024x1024, black on white) after the 10 s simulation."""
    with cli_errors():
        import io

        from worldforge.core.digests import digest_bytes
        from worldforge.core.io import atomic_write_bytes
        from worldforge.pcg.levels.level import parse_level_xml
        from worldforge.pcg.sim.physics import simulate
        from worldforge.pcg.sim.render import render_color, render_png

        config = {"simulate": not no_simulate, "color": color, "trials": trials}
        with _run_context(run_workspace, "pcg-render", config, resume_run) as run:
            _add_input(run, "level", level)
            data, name = _read_input(level)
            parsed = parse_level_xml(data, source=name)
            source: Any = parsed if no_simulate else simulate(parsed, trials=trials)
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
        self._task: Any = None

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


def _report_dict(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, (dict, list, str, int, float, bool)) or value is None:
        return value
    return str(value)


def _run_stage(
    name: str, source: Path, opts: dict[str, Any], progress: _RichProgress
) -> list[dict[str, Any]]:
    from worldforge.pcg.competition import stages as folder

    if name == "extract":
        return [folder.stage_extract(source, progress=progress).to_dict()]
    if name == "convert":
        return [folder.stage_convert(source, progress=progress).to_dict()]
    if name in ("stability", "images", "physics"):
        reports = folder.stage_physics(
            source,
            stability=name in ("stability", "physics"),
            images=name in ("images", "physics"),
            workers=opts["workers"],
            trials=opts["physics_trials"],
            raw_images=opts["raw_images"],
            progress=progress,
        )
        return [r.to_dict() for r in reports]
    import importlib

    from worldforge.core.errors import StageError

    try:
        scoring = importlib.import_module("worldforge.pcg.competition.scoring")
        if name == "similarity":
            out = scoring.stage_similarity(
                source, classifier=opts["classifier"], workers=opts["workers"], progress=progress
            )
        elif name == "diversity":
            out = scoring.stage_diversity(
                source, trials=opts["trials"], vector=opts["diversity_vector"], progress=progress
            )
        else:
            out = scoring.stage_score(
                source,
                trials=opts["trials"],
                exact=opts["exact"],
                progress=progress,
                models=opts.get("models"),
                baselines=opts.get("baselines"),
                zero_shot=opts.get("zero_shot"),
            )
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("worldforge"):
            raise
        raise StageError(f"stage {name}: module {exc.name} is not available in this installation.") from None
    report = _report_dict(out)
    if isinstance(report, dict) and "stage" in report:
        return [report]
    return [{"stage": name, "result": report}]


def _source_relative_logs(reports: list[dict[str, Any]], source: Path) -> list[dict[str, Any]]:
    """Stage reports with ``log`` relative to the competition folder (``logs/<stage>_log_<stamp>.txt``).

    Stage libraries return the log as the absolute path they wrote, which would put the host's
    directory layout into stdout and the run record; relative to ``--source`` it names the same file
    wherever the folder lives.
    """
    base = source.resolve()
    out: list[dict[str, Any]] = []
    for report in reports:
        log = report.get("log")
        if isinstance(log, str) and log:
            try:
                log = Path(log).resolve().relative_to(base).as_posix()
            except ValueError:
                from worldforge.workspace.layout import portable_path

                log = portable_path(log)
            report = {**report, "log": log}
        out.append(report)
    return out


def _digested_stages(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stage reports without ``log``: its file name carries the wall-clock time the stage started,
    and timestamps must stay out of the result digest (identical stages, identical digests)."""
    return [{k: v for k, v in report.items() if k != "log"} for report in reports]


def _names(option: str, values: list[str] | None) -> list[str] | None:
    """``--option a,b --option c`` -> ``["a", "b", "c"]``; ``None`` when the option was not given."""
    from worldforge.core.errors import WorldForgeError

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


def _score_selection(
    stage: str, source: Path, models: list[str] | None, baselines: list[str] | None, zero_shot: str | None
) -> dict[str, Any]:
    """The score stage's program selection, checked before any stage runs (``all`` takes hours).

    ``--models`` only fits the score stage: the earlier stages would read the model folders as
    teams. Names are checked against the folder by the same rule the score stage applies.
    """
    from worldforge.core.errors import WorldForgeError

    given = {
        "models": _names("--models", models),
        "baselines": _names("--baselines", baselines),
        "zero_shot": zero_shot,
    }
    selection: dict[str, Any] = {key: value for key, value in given.items() if value is not None}
    for key in selection:
        allowed = ("score",) if key == "models" else ("score", "all")
        if stage not in allowed:
            option = "--" + key.replace("_", "-")
            raise WorldForgeError(f"{option}: only the {' or '.join(allowed)} stage takes it, not {stage!r}.")
    if selection:
        from worldforge.pcg.competition.scoring import check_score_selection

        check_score_selection(source, **selection)
    return selection


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
    run_workspace: Path | None = _WORKSPACE_OPT,
    resume_run: str | None = _RESUME_OPT,
) -> None:
    """Run a competition folder stage; failed trials are logged and skipped, never abort the stage."""
    with cli_errors():
        from worldforge.core.errors import WorldForgeError
        from worldforge.execution.local import default_workers

        if stage not in STAGE_NAMES:
            raise WorldForgeError(f"stage must be one of {', '.join(STAGE_NAMES)}; got {stage!r}.")
        if not source.is_dir():
            raise WorldForgeError(f"{source}: source folder does not exist.")
        opts: dict[str, Any] = {
            "workers": workers or default_workers(),
            "physics_trials": physics_trials,
            "raw_images": raw_images,
            "classifier": classifier,
            "trials": trials,
            "diversity_vector": diversity_vector,
            "exact": exact,
        }
        # Only options given join ``opts``: the run config (and its digest) of an invocation
        # without them stays what it was before these options existed.
        opts.update(_score_selection(stage, source, models, baselines, zero_shot))
        plan: list[str] = list(ALL_ORDER) if stage == "all" else [stage]
        if stage == "all":  # one simulation per level feeds both physics stages
            plan = ["extract", "convert", "physics", "similarity", "diversity", "score"]
        config = {k: v for k, v in opts.items() if k != "workers"} | {"stage": stage}
        with _run_context(run_workspace, "pcg-stage", config, resume_run) as run:
            results: list[dict[str, Any]] = []
            if run is not None:  # the folder's state before the stage: every file's digest
                run.add_input_value("source-files", _stage_outputs(source))
            with _RichProgress() as progress:
                for name in plan:
                    if run is not None:
                        run.emit("stage.started", {"stage": name})
                    reports = _source_relative_logs(_run_stage(name, source, opts, progress), source)
                    results.extend(reports)
                    if run is not None:
                        run.emit("stage.finished", {"stage": name})
            if run is not None:
                outputs = _stage_outputs(source)
                for rel, digest in outputs.items():
                    run.record_item(rel, digest, {"path": rel, "digest": digest})
                run.write_artifact("reports/report.json", json.dumps(results, indent=2, default=str) + "\n")
                run.complete({"stages": _digested_stages(results), "outputs": outputs})
            for rep in results:
                if "succeeded" in rep:
                    print(
                        f"{rep['stage']}: {rep['succeeded']} succeeded, {rep['failed']} failed"
                        + (f" (log: {source / rep['log']})" if rep.get("log") else ""),
                        file=sys.stderr,
                    )
            _write_stdout(json.dumps(results, indent=2, default=str) + "\n")


def _stage_outputs(source: Path) -> dict[str, str]:
    """Digest of every file under the team stage folders (not logs), keyed by relative path."""
    from worldforge.core.digests import digest_file
    from worldforge.pcg.competition.stages import list_teams

    outputs: dict[str, str] = {}
    for team in list_teams(source):
        for path in sorted(team.rglob("*")):
            if path.is_file() and not path.name.startswith("."):
                outputs[path.relative_to(source).as_posix()] = digest_file(path)
    return outputs


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


__all__ = ["pcg_app", "register"]
