"""Providers: capability names, the provider protocol, events, the registry and built-ins.

Only light modules are imported here; client libraries (``ollama``) load when a provider that needs
them is instantiated.
"""

from worldforge.providers.base import (
    CAPABILITY_NAMES,
    BaseProvider,
    Capability,
    EmbeddingResult,
    GenerationResult,
    PredictionResult,
    Provider,
    ScoreResult,
    validate_capability,
)
from worldforge.providers.events import (
    CountingEventSink,
    EventSink,
    InMemoryEventSink,
    ProviderEvent,
)
from worldforge.providers.registry import ENTRY_POINT_GROUP, ProviderRegistry, split_provider_name

__all__ = [
    "CAPABILITY_NAMES",
    "ENTRY_POINT_GROUP",
    "BaseProvider",
    "Capability",
    "CountingEventSink",
    "EmbeddingResult",
    "EventSink",
    "GenerationResult",
    "InMemoryEventSink",
    "PredictionResult",
    "Provider",
    "ProviderEvent",
    "ProviderRegistry",
    "ScoreResult",
    "split_provider_name",
    "validate_capability",
]
