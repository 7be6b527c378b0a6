"""The one place heavy third-party libraries are imported: lazily, on first use.

Heavy means seconds or hundreds of megabytes on import (torch, transformers and its hub client,
Ray), a native engine only some commands need (Box2D), or a model client whose import costs more
than a mock run should pay (openai, ollama and its httpx). Everything else is imported at module
level where it is used; only the CLI's command modules defer their imports so ``--help`` is fast.

``import worldforge`` and ``worldforge --help`` must stay fast and must not load torch,
transformers, Ray or Box2D; first-party modules import each other at module level, and reach these
libraries only through the functions below. A missing optional library is a one-line
:class:`~worldforge.core.errors.WorldForgeError` naming the extra that installs it, never an
``ImportError`` traceback.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

from worldforge.core.errors import WorldForgeError

if TYPE_CHECKING:  # the classes other modules annotate with; a type checker reads them, nothing loads
    from torch import Generator as Generator
    from torch import Tensor as Tensor
    from torch.nn import Linear as Linear
    from torch.nn import Module as Module
    from transformers import ResNetForImageClassification as ResNetForImageClassification
    from transformers import ViTImageProcessor as ViTImageProcessor

#: Library -> the ``pip install`` that provides it.
EXTRAS: dict[str, str] = {
    "torch": "pip install 'worldforge[ml]' (torch==2.13.0, the CPU build)",
    "transformers": "pip install 'worldforge[ml]'",
    "huggingface_hub": "pip install 'worldforge[ml]'",
    "ray": "pip install 'worldforge[distributed]'",
    "openai": "pip install worldforge (the openai client)",
    "ollama": "pip install worldforge (the ollama client)",
    "httpx": "pip install worldforge (the ollama client's HTTP library)",
    "Box2D": "pip install worldforge (ufal-pybox2d)",
    "cryptography": "pip install 'worldforge[attest]' (signed attestations)",
}


def load(name: str) -> ModuleType:
    """Import ``name`` (a module of one of :data:`EXTRAS`' libraries) or fail naming the extra."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        root = name.split(".")[0]
        if (exc.name or "").split(".")[0] != root:
            raise  # the library is there but one of its own dependencies is broken: show that
        hint = EXTRAS.get(root, f"pip install {root}")
        raise WorldForgeError(f"{root} is not installed; {hint}.") from None


def torch() -> ModuleType:
    return load("torch")


def transformers() -> ModuleType:
    return load("transformers")


def huggingface_hub() -> ModuleType:
    return load("huggingface_hub")


def openai() -> ModuleType:
    return load("openai")


def ollama() -> ModuleType:
    return load("ollama")


def httpx() -> ModuleType:
    return load("httpx")


def ray() -> ModuleType:
    return load("ray")


def box2d() -> ModuleType:
    return load("Box2D")


__all__ = [
    "EXTRAS",
    "box2d",
    "httpx",
    "huggingface_hub",
    "load",
    "ollama",
    "openai",
    "ray",
    "torch",
    "transformers",
]
