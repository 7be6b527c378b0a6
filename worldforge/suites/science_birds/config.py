"""Science Birds suite options, item identities, the classifier adapter and the progress columns.

Everything here is cheap to import (no torch, Box2D or client libraries): options are validated
before any provider is called, so a typo in ``--characters`` fails in milliseconds.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, ProgressColumn, TextColumn
from rich.text import Text

from worldforge.config import project_config
from worldforge.core.errors import WorldForgeError
from worldforge.pcg.letters import LETTERS
from worldforge.pcg.programs.prompt import Program, resolve_programs
from worldforge.pcg.similarity.classifier import load_classifier
from worldforge.providers.openai_settings import check_base_urls
from worldforge.suites.science_birds.field import qualify_programs

DEFAULT_TRIALS = 10
DEFAULT_SEED = 42
CHUNK_SIZE = 32
#: Softmax/embedding values are rounded to this many decimals before they are recorded, so batch
#: composition (which can change the last float bits of CPU inference) never changes a result.
VECTOR_DECIMALS = 7


def parse_characters(spec: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"A-Z"``, ``"ABC"``, ``"A,C,X-Z"`` or a list → sorted unique uppercase letters."""
    if spec is None or spec == "":
        return LETTERS
    parts: list[str] = []
    if isinstance(spec, str):
        parts = [p for p in re.split(r"[,\s]+", spec.strip()) if p]
    else:
        parts = [str(p) for p in spec]
    letters: set[str] = set()
    for part in parts:
        part = part.upper() if len(part) in (1, 3) and part.isascii() else part
        if re.fullmatch(r"[A-Z]-[A-Z]", part):
            lo, hi = part[0], part[2]
            if lo > hi:
                raise WorldForgeError(f"--characters: range {part!r} is reversed.")
            letters.update(chr(c) for c in range(ord(lo), ord(hi) + 1))
        elif re.fullmatch(r"[A-Z]+", part):
            letters.update(part)
        else:
            raise WorldForgeError(
                f"--characters: {part!r} is not a letter, a list of letters or a range like A-Z."
            )
    return tuple(sorted(letters))


def _int_option(options: Mapping[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = options.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise WorldForgeError(f"--{key.replace('_', '-')}: expected an integer, got {value!r}.")
    try:
        number = int(value)
    except ValueError:
        raise WorldForgeError(f"--{key.replace('_', '-')}: expected an integer, got {value!r}.") from None
    if not low <= number <= high:
        raise WorldForgeError(f"--{key.replace('_', '-')}: {number} is outside {low}..{high}.")
    return number


def _bool_option(options: Mapping[str, Any], key: str) -> bool:
    """A switch: absent means off; anything but a boolean is a typo worth stopping for (the string
    ``"false"`` would otherwise turn it on)."""
    value = options.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise WorldForgeError(f"--{key.replace('_', '-')}: expected true or false, got {value!r}.")
    return value


def _wheelhouse(value: Any) -> str | None:
    """The folder of wheels submissions install from: absolute (the trials run elsewhere) and there
    now, so a typo fails before any environment is built."""
    if value is None:
        return None
    if not isinstance(value, str | os.PathLike) or not str(value).strip():
        raise WorldForgeError(f"--wheelhouse: expected a folder path, got {value!r}.")
    path = Path(value)
    if not path.is_absolute():
        raise WorldForgeError(f"--wheelhouse: expected an absolute path, got {str(value)!r}.")
    if not path.is_dir():
        raise WorldForgeError(f"--wheelhouse: {path} is not an existing folder.")
    return str(path)


def _index_url(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise WorldForgeError(f"index_url: expected a package index URL, got {value!r}.")
    return value


@dataclass(frozen=True)
class SuiteConfig:
    """The suite's options after validation (bad values fail before any model is called)."""

    programs: tuple[Program, ...]
    letters: tuple[str, ...]
    trials: int
    classifier: str | None
    workers: int
    diversity_vector: str
    master_seed: int
    exact: bool
    progress: bool
    cache_dir: Path | None
    chunk_size: int = CHUNK_SIZE
    options: dict[str, Any] = field(default_factory=dict)
    #: Score submission replies the gateway never served (the rules forbid changing the reply, so
    #: by default such a trial scores 0; this keeps the evidence and scores the text anyway).
    keep_unserved_replies: bool = False
    #: One row per submission team checked before the run (``--programs``, submission
    #: ``--program`` values): qualified or not, why, whether it ran. Empty without submissions.
    qualification: tuple[dict[str, Any], ...] = ()

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None) -> SuiteConfig:
        opts = dict(options or {})
        programs = opts.get("programs", opts.get("program"))
        if isinstance(programs, str):
            programs = [programs]
        vector = str(opts.get("diversity_vector") or "softmax")
        if vector not in {"softmax", "embedding"}:
            raise WorldForgeError(f"--diversity-vector: {vector!r} must be 'softmax' or 'embedding'.")
        workers_default = max(1, min(os.cpu_count() or 1, 8))
        classifier_default: str | None = None
        project = project_config()
        if project is not None:  # .worldforge/config.yaml supplies defaults the flags override
            workers_default = int(project.workers)
            classifier_default = project.classifier.checkpoint
            if opts.get("index_url") is None and project.submissions.index_url:
                opts["index_url"] = project.submissions.index_url
        if opts.get("wheelhouse") is not None:
            opts["wheelhouse"] = _wheelhouse(opts["wheelhouse"])
        _index_url(opts.get("index_url"))
        if opts.get("openai_base_url") is not None:  # a typo fails before a run is even created
            check_base_urls(opts["openai_base_url"])
        cache = opts.get("cache_dir")
        specs, table = qualify_programs(opts)
        if opts.get("field") and not specs:
            raise WorldForgeError(
                "--programs: no team qualified; nothing to run (see worldforge pcg qualify)."
            )
        return cls(
            programs=tuple(resolve_programs(specs if specs or opts.get("field") else programs)),
            letters=parse_characters(opts.get("characters")),
            trials=_int_option(opts, "trials", DEFAULT_TRIALS, 1, 1000),
            classifier=str(opts["classifier"]) if opts.get("classifier") else classifier_default,
            workers=_int_option(opts, "workers", workers_default, 1, 256),
            diversity_vector=vector,
            master_seed=_int_option(opts, "seed", DEFAULT_SEED, 0, 2**63 - 1),
            exact=bool(opts.get("exact", False)),
            progress=bool(opts.get("progress", True)),
            cache_dir=Path(cache) if cache else None,
            chunk_size=_int_option(opts, "chunk_size", CHUNK_SIZE, 1, 10_000),
            options=opts,
            keep_unserved_replies=_bool_option(opts, "keep_unserved_replies"),
            qualification=tuple(table),
        )

    def identity(self) -> dict[str, Any]:
        """What enters the run's input digest (paths, workers and progress do not change results).

        ``keep_unserved_replies`` changes scores, so it enters too, but only when on: a run that
        leaves it off keeps the input digest it always had."""
        identity: dict[str, Any] = {
            "programs": [{"name": p.name, "digest": p.digest} for p in self.programs],
            "letters": "".join(self.letters),
            "trials": self.trials,
            "classifier": self.classifier,
            "diversity_vector": self.diversity_vector,
            "seed": self.master_seed,
            "exact": self.exact,
        }
        if self.keep_unserved_replies:
            identity["keep_unserved_replies"] = True
        if self.qualification:  # which teams were left out, and why, changes the cohort
            identity["qualification"] = [
                {"team": r["team"], "qualified": r["qualified"], "reasons": list(r.get("reasons") or [])}
                for r in self.qualification
            ]
        return identity


@dataclass(frozen=True)
class ItemKey:
    model: str
    program: str
    letter: str
    trial: int

    @property
    def item_id(self) -> str:
        """Filesystem-safe, sortable id (``ollama:qwen2.5`` → ``ollama-qwen2.5``)."""
        model = re.sub(r"[^A-Za-z0-9._-]+", "-", self.model)
        return f"{model}__{self.program}__{self.letter}__{self.trial:03d}"

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "program": self.program, "letter": self.letter, "trial": self.trial}


def enumerate_items(models: Sequence[str], config: SuiteConfig) -> list[ItemKey]:
    """All items in a fixed order: model, program, letter, trial (1-based, as the official files)."""
    return [
        ItemKey(m, p.name, letter, t)
        for m in models
        for p in config.programs
        for letter in config.letters
        for t in range(1, config.trials + 1)
    ]


class Classifier:
    """Adapter over :func:`worldforge.pcg.similarity.classifier.load_classifier` (loaded once, lazily)."""

    def __init__(self, spec: str | None) -> None:
        self.spec = spec
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            self._model = load_classifier(self.spec)
        return self._model

    def identity(self) -> dict[str, Any]:
        model = self._load()
        ident = getattr(model, "identity", None)
        value = ident() if callable(ident) else ident
        if isinstance(value, Mapping):
            return dict(value)
        return {"id": str(value or self.spec or "bundled")}

    def prep_spec(self, channels: int, size: tuple[int, int]) -> Any | None:
        """The loaded classifier's picklable input shortcut for images of this layout, so level
        workers can prepare its inputs (``None``: no shortcut, or no model loaded by this adapter)."""
        spec = getattr(self._model, "prep_spec", None)
        return spec(channels, size) if callable(spec) else None

    def classify(
        self, pngs: Sequence[bytes], embedding: bool = True
    ) -> list[tuple[list[float], list[float]]]:
        """Softmax over A–Z and (when asked) the embedding per image, rounded (VECTOR_DECIMALS).

        Images are PNG bytes; a :class:`~worldforge.pcg.similarity.prep.PreparedPng` also carries
        the input a level worker prepared from the in-memory render, which the model then uses."""
        if not pngs:
            return []
        model = self._load()
        try:
            # PNG decoding releases the GIL: let the classifier decode with two threads.
            result = model.classify(list(pngs), embedding=embedding, workers=2)
        except TypeError:  # a classifier without these switches
            result = model.classify(list(pngs))
        softmax = _rows(getattr(result, "softmax", None))
        embeds = _rows(getattr(result, "embeddings", None)) if embedding else []
        out: list[tuple[list[float], list[float]]] = []
        for i in range(len(pngs)):
            sm = [round(float(v), VECTOR_DECIMALS) for v in softmax[i]]
            em = [round(float(v), VECTOR_DECIMALS) for v in embeds[i]] if embeds else []
            out.append((sm, em))
        return out


def _rows(value: Any) -> list[list[float]]:
    if value is None:
        return []
    tolist = getattr(value, "tolist", None)
    data = tolist() if callable(tolist) else value
    return [list(map(float, row)) for row in data]


def iter_progress_columns() -> Iterable[Any]:
    """Rich progress columns: bar, count, items/s and ETA.

    Items complete in chunk-sized bursts and resumed items arrive all at once, so the rate is the
    average since the first *processed* item (``task.fields["base"]`` holds the reused count),
    not rich's short-window speed estimate.
    """

    def rate(task: Any) -> float | None:
        done = task.completed - task.fields.get("base", 0)
        elapsed = task.elapsed or 0.0
        return done / elapsed if done > 0 and elapsed > 0 else None

    class RateColumn(ProgressColumn):
        def render(self, task: Any) -> Any:
            value = rate(task)
            return Text(f"{value:.1f} items/s" if value else "- items/s")

    class EtaColumn(ProgressColumn):
        def render(self, task: Any) -> Any:
            value = rate(task)
            if task.finished:
                return Text(f"done in {task.finished_time or task.elapsed or 0:.1f} s")
            if not value:
                return Text("ETA -:--")
            left = int(round((task.total - task.completed) / value))
            return Text(f"ETA {left // 60}:{left % 60:02d}")

    return (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        EtaColumn(),
    )


__all__ = [
    "CHUNK_SIZE",
    "DEFAULT_SEED",
    "DEFAULT_TRIALS",
    "VECTOR_DECIMALS",
    "Classifier",
    "ItemKey",
    "SuiteConfig",
    "enumerate_items",
    "iter_progress_columns",
    "parse_characters",
]
