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

from rich.progress import BarColumn, MofNCompleteColumn, ProgressColumn, Task, TextColumn
from rich.text import Text

from worldforge.config import Price, parse_pricing, project_config
from worldforge.core.canonical import JSONObject
from worldforge.core.errors import WorldForgeError
from worldforge.pcg.letters import LETTERS
from worldforge.pcg.programs.prompt import Program, resolve_programs
from worldforge.pcg.scoring.uncertainty import DEFAULT_RESAMPLES as UNCERTAINTY_RESAMPLES
from worldforge.pcg.scoring.uncertainty import DEFAULT_SEED as UNCERTAINTY_SEED
from worldforge.pcg.similarity.classifier import LetterClassifier, load_classifier
from worldforge.pcg.similarity.prep import PrepSpec
from worldforge.providers.registry import check_provider_options
from worldforge.suites.science_birds.field import QualificationRow, qualify_programs
from worldforge.suites.science_birds.records import ItemKeyFields

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


def _wheelhouse(value: object) -> str | None:
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


def _index_url(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise WorldForgeError(f"index_url: expected a package index URL, got {value!r}.")
    return value


@dataclass(frozen=True, slots=True)
class ScienceBirdsOptions:
    """The options ``worldforge eval --suite science-birds`` takes from the command line, by key.

    ``--suite-option KEY=VALUE`` is checked against these fields (an unknown key or a value of the
    wrong type stops before the run), and each named flag is an alias of one key: ``--program``
    gives ``programs``, ``--programs`` gives ``field``, ``--seed`` gives ``seed``, and every other
    flag is its key with dashes. The values are validated when :class:`SuiteConfig` reads them.
    """

    programs: list[str] | None = None
    field: list[str] | None = None
    trials: int | None = None
    characters: str | None = None
    classifier: str | None = None
    workers: int | None = None
    diversity_vector: str | None = None
    seed: int | None = None
    ollama_host: str | list[str] | None = None
    openai_base_url: str | list[str] | None = None
    max_connections: int | None = None
    executor: str | None = None
    ray_address: str | None = None
    no_install: bool | None = None
    sandbox: str | None = None
    keep_unserved_replies: bool | None = None
    run_unqualified: bool | None = None
    #: A folder of wheels, made absolute (submission environments are built elsewhere).
    wheelhouse: Path | None = None
    #: Letter draws of the ranking's bootstrap (0 turns the intervals off) and their seed.
    uncertainty_resamples: int | None = None
    uncertainty_seed: int | None = None
    #: Stop generation before the run's prompt+completion tokens would pass this (resumable).
    max_run_tokens: int | None = None


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
    qualification: tuple[QualificationRow, ...] = ()
    #: Letter draws of the ranking's bootstrap (:mod:`worldforge.pcg.scoring.uncertainty`; 0: no
    #: intervals) and the seed that fixes them, so the intervals are part of the reproducible result.
    uncertainty_resamples: int = UNCERTAINTY_RESAMPLES
    uncertainty_seed: int = UNCERTAINTY_SEED
    #: Per-model token prices (the ``pricing`` option, else ``pricing:`` in the project
    #: configuration); ``None``: the run is not priced. A priced run must price every model.
    pricing: dict[str, Price] | None = None
    #: Generation stops before the run's tokens (counted by the gateway) would pass this; the
    #: items done are kept and the run resumes. Not an input: it changes when a run ends, not what
    #: any item holds.
    max_run_tokens: int | None = None

    @property
    def executor(self) -> str:
        """The executor the level stages run on (``--executor``; ``local``: this machine's pool)."""
        return str(self.options.get("executor") or "local")

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
        pricing = project.pricing if project is not None else None
        if opts.get("pricing") is not None:
            pricing = parse_pricing(opts["pricing"], "pricing")
        if project is not None:  # .worldforge/config.yaml supplies defaults the flags override
            workers_default = int(project.workers)
            classifier_default = project.classifier.checkpoint
            if opts.get("index_url") is None and project.submissions.index_url:
                opts["index_url"] = project.submissions.index_url
        if opts.get("wheelhouse") is not None:
            opts["wheelhouse"] = _wheelhouse(opts["wheelhouse"])
        _index_url(opts.get("index_url"))
        check_provider_options(opts)  # a typo in a server address fails before a run is created
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
            uncertainty_resamples=_int_option(
                opts, "uncertainty_resamples", UNCERTAINTY_RESAMPLES, 0, 10_000_000
            ),
            uncertainty_seed=_int_option(opts, "uncertainty_seed", UNCERTAINTY_SEED, 0, 2**63 - 1),
            pricing=pricing,
            max_run_tokens=(
                _int_option(opts, "max_run_tokens", 1, 1, 2**63 - 1)
                if opts.get("max_run_tokens") is not None
                else None
            ),
        )

    def identity(self) -> JSONObject:
        """What enters the run's input digest (paths, workers and progress do not change results).

        ``keep_unserved_replies`` changes scores, so it enters too, but only when on: a run that
        leaves it off keeps the input digest it always had. The ranking-uncertainty settings change
        the report, not the items, and enter the same way: only when they differ from the defaults."""
        identity: JSONObject = {
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
        if (self.uncertainty_resamples, self.uncertainty_seed) != (UNCERTAINTY_RESAMPLES, UNCERTAINTY_SEED):
            identity["uncertainty"] = {"resamples": self.uncertainty_resamples, "seed": self.uncertainty_seed}
        if self.pricing is not None:  # the report's costs follow from it; unpriced runs keep their digest
            identity["pricing"] = {m: {**p.to_dict()} for m, p in sorted(self.pricing.items())}
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

    def to_dict(self) -> ItemKeyFields:
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
        self._model: LetterClassifier | None = None

    def _load(self) -> LetterClassifier:
        if self._model is None:
            self._model = load_classifier(self.spec)
        return self._model

    def identity(self) -> dict[str, str]:
        return dict(self._load().identity)

    def prep_spec(self, channels: int, size: tuple[int, int]) -> PrepSpec | None:
        """The loaded classifier's picklable input shortcut for images of this layout, so level
        workers can prepare its inputs (``None``: no shortcut, or no model loaded by this adapter)."""
        return self._model.prep_spec(channels, size) if self._model is not None else None

    def classify(
        self, pngs: Sequence[bytes], embedding: bool = True
    ) -> list[tuple[list[float], list[float]]]:
        """Softmax over A–Z and (when asked) the embedding per image, rounded (VECTOR_DECIMALS).

        Images are PNG bytes; a :class:`~worldforge.pcg.similarity.prep.PreparedPng` also carries
        the input a level worker prepared from the in-memory render, which the model then uses."""
        if not pngs:
            return []
        # PNG decoding releases the GIL: let the classifier decode with two threads.
        result = self._load().classify(list(pngs), embedding=embedding, workers=2)
        softmax = result.softmax
        embeds = (result.embeddings or []) if embedding else []
        out: list[tuple[list[float], list[float]]] = []
        for i in range(len(pngs)):
            sm = [round(float(v), VECTOR_DECIMALS) for v in softmax[i]]
            em = [round(float(v), VECTOR_DECIMALS) for v in embeds[i]] if embeds else []
            out.append((sm, em))
        return out


def iter_progress_columns() -> Iterable[ProgressColumn]:
    """Rich progress columns: bar, count, items/s and ETA.

    Items complete in chunk-sized bursts and resumed items arrive all at once, so the rate is the
    average since the first *processed* item (``task.fields["base"]`` holds the reused count),
    not rich's short-window speed estimate.
    """

    def rate(task: Task) -> float | None:
        done = task.completed - task.fields.get("base", 0)
        elapsed = task.elapsed or 0.0
        return done / elapsed if done > 0 and elapsed > 0 else None

    class RateColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            value = rate(task)
            return Text(f"{value:.1f} items/s" if value else "- items/s")

    class EtaColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            value = rate(task)
            if task.finished:
                return Text(f"done in {task.finished_time or task.elapsed or 0:.1f} s")
            if not value or task.total is None:  # no rate yet, or a task of unknown length
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
    "ScienceBirdsOptions",
    "SuiteConfig",
    "enumerate_items",
    "iter_progress_columns",
    "parse_characters",
]
