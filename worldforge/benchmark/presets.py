"""Benchmark presets: YAML files naming a harness, its inputs and a budget.

A preset names a harness (``providers`` — provider operations on the mock scene; ``pcg-pipeline`` —
the Science Birds level pipeline), its inputs, iteration counts and a budget. Presets are looked up
in ``$WORLDFORGE_PRESETS``, then ``./presets``, then the presets shipped in the package
(:data:`worldforge.presets.PRESETS_DIR`, which a checkout's top-level ``presets`` links to), so an
installed wheel lists the same presets as a checkout; ``--preset`` also accepts a path to a YAML
file. Unknown keys are errors that name the key.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from worldforge.core.canonical import JSONObject
from worldforge.core.errors import WorldForgeError
from worldforge.presets import PRESETS_DIR

PRESET_SCHEMA_VERSION = 1
PRESETS_ENV = "WORLDFORGE_PRESETS"
HARNESSES = ("providers", "pcg-pipeline")
PROVIDER_OPERATIONS = ("predict", "score", "generate", "embed")
PCG_OPERATIONS = ("extract", "convert", "simulate", "render", "level")
BUDGET_KEYS = (
    "provider",
    "operation",
    "min_success_rate",
    "max_error_count",
    "max_retry_count",
    "max_average_latency_ms",
    "max_p50_latency_ms",
    "max_p95_latency_ms",
    "min_throughput_per_second",
)
_TOP_KEYS = (
    "schema_version",
    "name",
    "description",
    "category",
    "harness",
    "claim_boundary",
    "providers",
    "operations",
    "iterations",
    "concurrency",
    "inputs",
    "budget",
)


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    category: str
    harness: str
    claim_boundary: str
    providers: tuple[str, ...]
    operations: tuple[str, ...]
    iterations: int
    concurrency: int
    inputs: JSONObject = field(default_factory=dict)
    budget: tuple[JSONObject, ...] = ()
    source: str = ""

    def to_dict(self) -> JSONObject:
        return {
            "name": self.name,
            "description": self.description,
            "category": self.category,
            "harness": self.harness,
            "claim_boundary": self.claim_boundary,
            "providers": list(self.providers),
            "operations": list(self.operations),
            "iterations": self.iterations,
            "concurrency": self.concurrency,
            "inputs": dict(self.inputs),
            "budget": [dict(b) for b in self.budget],
            "source": self.source,
        }


def preset_dirs() -> list[Path]:
    """Existing preset directories in lookup order (first wins on a name clash), duplicates dropped."""

    dirs: list[Path] = []
    if os.environ.get(PRESETS_ENV):
        dirs.append(Path(os.environ[PRESETS_ENV]))
    dirs.append(Path("presets"))
    dirs.append(PRESETS_DIR)
    seen: list[Path] = []
    for d in dirs:
        if d.is_dir() and d.resolve() not in [s.resolve() for s in seen]:
            seen.append(d)
    return seen


MAX_ITERATIONS = 100_000  # a preset is a benchmark, not a soak test: a typo must not run for days
MAX_CONCURRENCY = 64


def _int(where: str, value: object, minimum: int, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise WorldForgeError(f"{where}: expected an integer in [{minimum}, {maximum}], got {value!r}.")
    return value


def parse_budget(entries: object, where: str) -> tuple[JSONObject, ...]:
    """Validate budget entries (at least one threshold each; unknown keys rejected)."""
    if entries is None:
        return ()
    if not isinstance(entries, list):
        raise WorldForgeError(f"{where}: expected a list of budget entries.")
    out = []
    for index, entry in enumerate(entries):
        at = f"{where}[{index}]"
        if not isinstance(entry, dict):
            raise WorldForgeError(f"{at}: expected a mapping.")
        for key in entry:
            if key not in BUDGET_KEYS:
                raise WorldForgeError(f"{at}.{key}: unknown budget key (allowed: {', '.join(BUDGET_KEYS)}).")
        thresholds = [k for k in entry if k not in ("provider", "operation")]
        if not thresholds:
            raise WorldForgeError(f"{at}: needs at least one threshold.")
        for key in thresholds:
            value = entry[key]
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value < 0
            ):
                raise WorldForgeError(f"{at}.{key}: expected a number >= 0, got {value!r}.")
            if key == "min_success_rate" and value > 1:
                raise WorldForgeError(f"{at}.min_success_rate: must be within [0, 1].")
        out.append(dict(entry))
    return tuple(out)


def parse_preset(data: object, source: str) -> Preset:
    if not isinstance(data, dict):
        raise WorldForgeError(f"{source}: expected a mapping.")
    for key in data:
        if key not in _TOP_KEYS:
            raise WorldForgeError(f"{source}: {key}: unknown key (allowed: {', '.join(_TOP_KEYS)}).")
    if data.get("schema_version") != PRESET_SCHEMA_VERSION:
        raise WorldForgeError(f"{source}: schema_version: expected {PRESET_SCHEMA_VERSION}.")
    for key in ("name", "description", "category", "harness", "claim_boundary"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise WorldForgeError(f"{source}: {key}: expected a non-empty string.")
    harness = data["harness"]
    if harness not in HARNESSES:
        raise WorldForgeError(f"{source}: harness: {harness!r} is not one of {', '.join(HARNESSES)}.")
    allowed_ops = PROVIDER_OPERATIONS if harness == "providers" else PCG_OPERATIONS
    operations = data.get("operations") or list(allowed_ops)
    if not isinstance(operations, list) or any(op not in allowed_ops for op in operations):
        raise WorldForgeError(f"{source}: operations: each must be one of {', '.join(allowed_ops)}.")
    providers = data.get("providers") or []
    if harness == "providers" and (not isinstance(providers, list) or not providers):
        raise WorldForgeError(f"{source}: providers: expected a non-empty list.")
    inputs = data.get("inputs") or {}
    if not isinstance(inputs, dict):
        raise WorldForgeError(f"{source}: inputs: expected a mapping.")
    return Preset(
        name=data["name"],
        description=data["description"],
        category=data["category"],
        harness=harness,
        claim_boundary=data["claim_boundary"],
        providers=tuple(str(p) for p in providers),
        operations=tuple(dict.fromkeys(operations)),
        iterations=_int(f"{source}: iterations", data.get("iterations", 5), 1, MAX_ITERATIONS),
        concurrency=_int(f"{source}: concurrency", data.get("concurrency", 1), 1, MAX_CONCURRENCY),
        inputs=inputs,
        budget=parse_budget(data.get("budget"), f"{source}: budget"),
        source=source,
    )


def load_preset(name_or_path: str) -> Preset:
    """A preset by name (searched in :func:`preset_dirs`) or by YAML path."""

    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") and candidate.is_file():
        path = candidate
        label = name_or_path  # an explicit file: errors name it as the user wrote it
    else:
        matches = [
            d / f"{name_or_path}.yaml" for d in preset_dirs() if (d / f"{name_or_path}.yaml").is_file()
        ]
        if not matches:
            names = ", ".join(str(p["name"]) for p in list_presets()) or "none"
            raise WorldForgeError(f"--preset: unknown preset {name_or_path!r} (available: {names}).")
        path = matches[0]
        label = f"presets/{path.name}"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise WorldForgeError(
            f"{label}: not UTF-8 text (byte {exc.start}); expected a YAML preset."
        ) from None
    except yaml.YAMLError as exc:
        raise WorldForgeError(f"{label}: invalid YAML ({' '.join(str(exc).split())}).") from None
    preset = parse_preset(data, label)
    if preset.name != path.stem:
        raise WorldForgeError(f"{label}: name {preset.name!r} does not match the file name.")
    return preset


def list_presets() -> list[JSONObject]:
    """Every preset found (its :meth:`Preset.to_dict`, or its name and the error that makes it
    invalid), first directory wins on name clashes, sorted by name."""

    found: dict[str, JSONObject] = {}
    for directory in preset_dirs():
        for path in sorted(directory.glob("*.yaml")):
            if path.stem in found:
                continue
            try:
                preset = parse_preset(
                    yaml.safe_load(path.read_text(encoding="utf-8")), f"presets/{path.name}"
                )
            except (WorldForgeError, yaml.YAMLError, UnicodeDecodeError) as exc:
                found[path.stem] = {"name": path.stem, "error": str(exc)}
                continue
            found[path.stem] = preset.to_dict()
    return [found[k] for k in sorted(found)]


__all__ = [
    "BUDGET_KEYS",
    "HARNESSES",
    "PCG_OPERATIONS",
    "PROVIDER_OPERATIONS",
    "Preset",
    "list_presets",
    "load_preset",
    "parse_budget",
    "parse_preset",
    "preset_dirs",
]
