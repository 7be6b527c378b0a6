"""``.worldforge/config.yaml``: project defaults for run workspaces, retention, Ollama, OpenAI-compatible
servers, classifier, workers and the submissions' package index.

The file is optional. It is looked up at ``$WORLDFORGE_CONFIG`` or ``./.worldforge/config.yaml``;
relative paths inside it resolve against the project directory (the parent of ``.worldforge``), so
a command behaves the same from any sub-directory that passes the same config. Unknown keys are an
error naming the key and the allowed ones, because a typo such as ``keep_lastest`` silently falling
back to a default is exactly the kind of surprise that deletes runs someone wanted to keep.
A commented example lives in ``.worldforge.example/config.yaml``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from worldforge.core.canonical import JSONObject
from worldforge.core.errors import WorldForgeError

CONFIG_ENV = "WORLDFORGE_CONFIG"
DEFAULT_CONFIG_PATH = Path(".worldforge") / "config.yaml"
DEFAULT_WORKSPACE_DIR = Path(".worldforge")


@dataclass(frozen=True)
class RetentionConfig:
    max_age_days: int = 30
    keep_latest: int = 10
    young_hours: float = 24.0


@dataclass(frozen=True)
class OllamaConfig:
    host: str = "http://127.0.0.1:11434"
    model: str | None = None
    timeout_s: float = 120.0


@dataclass(frozen=True)
class OpenAIConfig:
    """An OpenAI-compatible server for ``openai:<model>`` (``OPENAI_BASE_URL``/``OPENAI_API_KEY``
    override it). ``api_key`` is never shown: :meth:`WorldForgeConfig.to_dict` masks it."""

    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 120.0


@dataclass(frozen=True)
class SubmissionsConfig:
    """Where competition submissions install their ``requirements.txt`` from: a project behind a
    proxy or offline mirror names its package index once here instead of on every command."""

    index_url: str | None = None


@dataclass(frozen=True)
class AttestConfig:
    """Public keys ``runs verify`` checks attestation signatures against when ``--key`` is not given
    (PEM files; relative paths resolve against the project directory). Never private keys: the
    signing key is named on the command line only, so it is never recorded in a file that travels."""

    trusted_keys: tuple[Path, ...] = ()


@dataclass(frozen=True)
class ClassifierConfig:
    checkpoint: str | None = None
    device: str = "cpu"


@dataclass(frozen=True)
class Price:
    """A model's price per million input (prompt) and output (completion) tokens, in whatever
    currency the map is written in (the report shows the number, not a currency)."""

    input: float
    output: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1_000_000

    def to_dict(self) -> dict[str, float]:
        return {"input": self.input, "output": self.output}


def parse_pricing(raw: object, where: str = "pricing") -> dict[str, Price]:
    """``{model: {input: N, output: N}}`` with non-negative prices per million tokens; the model
    names are the run's provider names (``ollama:llama3``). ``WorldForgeError`` names a bad entry."""
    if not isinstance(raw, dict):
        raise WorldForgeError(f"{where}: expected a mapping of model -> {{input, output}} prices.")
    out: dict[str, Price] = {}
    for model, entry in raw.items():
        if not isinstance(model, str) or not isinstance(entry, dict):
            raise WorldForgeError(f"{where}.{model}: expected {{input: N, output: N}} per million tokens.")
        _check_keys(f"{where}.{model}", entry, ("input", "output"))
        missing = [side for side in ("input", "output") if side not in entry]
        if missing:
            raise WorldForgeError(f"{where}.{model}: missing {', '.join(missing)} price.")
        out[model] = Price(
            float(_number(f"{where}.{model}.input", entry["input"], integer=False, minimum=0)),
            float(_number(f"{where}.{model}.output", entry["output"], integer=False, minimum=0)),
        )
    return out


@dataclass(frozen=True)
class WorldForgeConfig:
    """Parsed configuration; ``source`` is ``None`` when no file exists (all defaults)."""

    source: Path | None = None
    workspace_dir: Path | None = None
    retention: RetentionConfig = field(default_factory=RetentionConfig)
    ollama: OllamaConfig = field(default_factory=OllamaConfig)
    classifier: ClassifierConfig = field(default_factory=ClassifierConfig)
    workers: int = 1
    openai: OpenAIConfig = field(default_factory=OpenAIConfig)
    submissions: SubmissionsConfig = field(default_factory=SubmissionsConfig)
    attest: AttestConfig = field(default_factory=AttestConfig)
    #: Per-model token prices (``pricing:``); ``None``: the run is not priced.
    pricing: dict[str, Price] | None = None

    def to_dict(self) -> JSONObject:
        """The configuration as ``worldforge config show`` prints it (the API key masked)."""
        return {
            "workspace_dir": self.workspace_dir.as_posix() if self.workspace_dir else None,
            "retention": vars(self.retention).copy(),
            "ollama": vars(self.ollama).copy(),
            "classifier": vars(self.classifier).copy(),
            "workers": self.workers,
            "openai": {**vars(self.openai), "api_key": "***" if self.openai.api_key else None},
            "submissions": vars(self.submissions).copy(),
            "attest": {"trusted_keys": [p.as_posix() for p in self.attest.trusted_keys]},
            "pricing": (
                {m: dict(p.to_dict()) for m, p in self.pricing.items()} if self.pricing is not None else None
            ),
        }


_SECTIONS: dict[str, type] = {
    "retention": RetentionConfig,
    "ollama": OllamaConfig,
    "classifier": ClassifierConfig,
    "openai": OpenAIConfig,
    "submissions": SubmissionsConfig,
}
_TOP_KEYS = (
    "workspace_dir",
    "retention",
    "ollama",
    "classifier",
    "workers",
    "openai",
    "submissions",
    "attest",
    "pricing",
)
#: Schemes pip accepts for an index: a server, or a local folder laid out as a simple index.
_INDEX_SCHEMES = ("http://", "https://", "file://")


def _check_keys(where: str, data: Iterable[object], allowed: tuple[str, ...]) -> None:
    for key in data:
        if key not in allowed:
            raise WorldForgeError(f"{where}.{key}: unknown key (allowed: {', '.join(allowed)}).")


def _number(where: str, value: object, *, integer: bool, minimum: float) -> int | float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or (integer and not isinstance(value, int))
    ):
        raise WorldForgeError(f"{where}: expected {'an integer' if integer else 'a number'}, got {value!r}.")
    if value < minimum:
        raise WorldForgeError(f"{where}: must be >= {minimum:g}, got {value!r}.")
    return value


def _section(name: str, raw: object, label: str) -> Any:
    cls = _SECTIONS[name]
    if raw is None:
        return cls()
    if not isinstance(raw, dict):
        raise WorldForgeError(f"{label}:{name}: expected a mapping.")
    defaults = cls()
    allowed = tuple(vars(defaults))
    _check_keys(f"{label}:{name}", raw, allowed)
    values: dict[str, object] = {}
    for key, value in raw.items():
        where = f"{label}:{name}.{key}"
        default = getattr(defaults, key)
        if isinstance(default, bool):
            raise WorldForgeError(f"{where}: unsupported")  # pragma: no cover - no boolean options yet
        if isinstance(default, int):
            values[key] = _number(where, value, integer=True, minimum=0)
        elif isinstance(default, float):
            values[key] = float(_number(where, value, integer=False, minimum=0))
        elif value is not None and not isinstance(value, str):
            raise WorldForgeError(f"{where}: expected a string, got {value!r}.")
        else:
            values[key] = value
    if name == "ollama" and "host" in values:
        host = str(values["host"])
        if not host.startswith(("http://", "https://")):
            raise WorldForgeError(f"{label}:ollama.host: expected an http(s) URL, got {host!r}.")
    if name == "openai" and values.get("base_url") is not None:
        url = str(values["base_url"])
        if not url.startswith(("http://", "https://")):
            raise WorldForgeError(f"{label}:openai.base_url: expected an http(s) URL, got {url!r}.")
    if name == "submissions" and values.get("index_url") is not None:
        url = str(values["index_url"])
        if not url.startswith(_INDEX_SCHEMES):
            raise WorldForgeError(
                f"{label}:submissions.index_url: expected an http(s) or file:// URL, got {url!r}."
            )
    return cls(**values)


def _attest(raw: object, label: str, base: Path) -> AttestConfig:
    """``attest: {trusted_keys: [PEM path, ...]}``; each path must be a non-empty string."""
    if raw is None:
        return AttestConfig()
    if not isinstance(raw, dict):
        raise WorldForgeError(f"{label}:attest: expected a mapping.")
    _check_keys(f"{label}:attest", raw, ("trusted_keys",))
    keys = raw.get("trusted_keys") or []
    if not isinstance(keys, list) or not all(isinstance(k, str) and k.strip() for k in keys):
        raise WorldForgeError(f"{label}:attest.trusted_keys: expected a list of public key file paths.")
    paths = [Path(os.path.expanduser(k)) for k in keys]
    return AttestConfig(tuple(p if p.is_absolute() else base / p for p in paths))


def config_path() -> Path:
    """Where the configuration is read from (the file may not exist)."""
    override = os.environ.get(CONFIG_ENV)
    return Path(override) if override else DEFAULT_CONFIG_PATH


def parse_config(data: object, source: Path) -> WorldForgeConfig:
    """Validate a parsed YAML document."""
    label = source.as_posix()
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise WorldForgeError(f"{label}: expected a mapping at the top level.")
    for key in data:
        if key not in _TOP_KEYS:
            raise WorldForgeError(f"{label}:{key}: unknown key (allowed: {', '.join(_TOP_KEYS)}).")
    base = source.resolve().parent
    if base.name.startswith(".worldforge"):
        base = base.parent
    workspace: Path | None = None
    if data.get("workspace_dir") is not None:
        raw = data["workspace_dir"]
        if not isinstance(raw, str) or not raw.strip():
            raise WorldForgeError(f"{label}:workspace_dir: expected a non-empty path string.")
        path = Path(os.path.expanduser(raw))
        workspace = path if path.is_absolute() else base / path
    workers = 1
    if "workers" in data:
        workers = int(_number(f"{label}:workers", data["workers"], integer=True, minimum=1))
    classifier = _section("classifier", data.get("classifier"), label)
    if classifier.checkpoint and not Path(classifier.checkpoint).is_absolute():
        classifier = ClassifierConfig(checkpoint=str(base / classifier.checkpoint), device=classifier.device)
    pricing = None
    if data.get("pricing") is not None:
        pricing = parse_pricing(data["pricing"], f"{label}:pricing")
    return WorldForgeConfig(
        source=source,
        workspace_dir=workspace,
        retention=_section("retention", data.get("retention"), label),
        ollama=_section("ollama", data.get("ollama"), label),
        classifier=classifier,
        workers=workers,
        openai=_section("openai", data.get("openai"), label),
        submissions=_section("submissions", data.get("submissions"), label),
        attest=_attest(data.get("attest"), label, base),
        pricing=pricing,
    )


def load_config(path: str | Path | None = None) -> WorldForgeConfig:
    """Load and validate the configuration; defaults when the file does not exist."""

    source = Path(path) if path is not None else config_path()
    if not source.is_file():
        if path is not None or os.environ.get(CONFIG_ENV):
            raise WorldForgeError(f"{source}: configuration file not found.")
        return WorldForgeConfig()
    try:
        data = yaml.safe_load(source.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise WorldForgeError(f"{source}: not UTF-8 text (byte {exc.start}); expected a YAML file.") from None
    except OSError as exc:
        raise WorldForgeError(f"{source}: cannot read configuration ({exc.strerror}).") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise WorldForgeError(f"{source}:{where} invalid YAML ({getattr(exc, 'problem', exc)}).") from None
    return parse_config(data, source)


def project_config() -> WorldForgeConfig | None:
    """The parsed project configuration file, or ``None`` when there is none (settings then fall
    back to their own defaults rather than to this module's)."""
    config = load_config()
    return config if config.source is not None else None


def default_run_workspace() -> Path | None:
    """The configured run workspace for ``--workspace`` when the flag is omitted (``None``: off)."""
    return load_config().workspace_dir


def default_workspace_dir() -> Path:
    """Workspace for ``worldforge runs …``: the configured one, else ``.worldforge``."""
    return load_config().workspace_dir or DEFAULT_WORKSPACE_DIR


__all__ = [
    "CONFIG_ENV",
    "AttestConfig",
    "ClassifierConfig",
    "OllamaConfig",
    "OpenAIConfig",
    "Price",
    "RetentionConfig",
    "SubmissionsConfig",
    "WorldForgeConfig",
    "config_path",
    "default_run_workspace",
    "default_workspace_dir",
    "load_config",
    "parse_config",
    "parse_pricing",
    "project_config",
]
