"""WorldForge: reproducible evaluation with attachable evidence.

The public API is re-exported lazily (PEP 562 ``__getattr__``) so that ``import worldforge`` stays
cheap and never imports torch, transformers or Box2D. Attribute access imports only the module
that defines the name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from worldforge._imports import lazy_exports

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # core
    "WorldForgeError": "worldforge.core.errors",
    "WorldForgeException": "worldforge.core.errors",
    "WorldStateError": "worldforge.core.errors",
    "ProviderError": "worldforge.core.errors",
    "StageError": "worldforge.core.errors",
    "GateFailure": "worldforge.core.errors",
    "canonical_json": "worldforge.core.canonical",
    "digest_payload": "worldforge.core.digests",
    "digest_file": "worldforge.core.digests",
    "digest_bytes": "worldforge.core.digests",
    "Position": "worldforge.core.entities",
    "BBox": "worldforge.core.entities",
    "SceneObject": "worldforge.core.entities",
    "Action": "worldforge.core.entities",
    "World": "worldforge.core.world",
    "Capability": "worldforge.providers.base",
    "CAPABILITY_NAMES": "worldforge.providers.base",
    "ProviderEvent": "worldforge.providers.events",
    "GenerationResult": "worldforge.providers.base",
    "WorldForge": "worldforge.forge",
    # planning
    "LatentMPCController": "worldforge.planning.mpc",
    "Goal": "worldforge.planning.goals",
    # evaluation
    "EvaluationSuite": "worldforge.evaluation",
    "EvaluationScenario": "worldforge.evaluation",
    "EvaluationContext": "worldforge.evaluation",
    "EvaluationResult": "worldforge.evaluation",
    "EvaluationReport": "worldforge.evaluation",
    "ProvenanceEnvelope": "worldforge.evaluation",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:  # pragma: no cover
    from worldforge.core.entities import Action as Action
    from worldforge.core.entities import BBox as BBox
    from worldforge.core.entities import Position as Position
    from worldforge.core.entities import SceneObject as SceneObject
    from worldforge.core.errors import WorldForgeError as WorldForgeError
    from worldforge.core.world import World as World
    from worldforge.forge import WorldForge as WorldForge
