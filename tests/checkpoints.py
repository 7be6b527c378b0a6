"""Classifier checkpoints the tests build locally (random weights, ``save_pretrained``; no hub)."""

from __future__ import annotations

from pathlib import Path

import pytest


def tiny_vit(folder: Path) -> Path:
    """A 1-layer ViT with the A-Z labels: enough to exercise the measurement path in seconds."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    labels = {i: chr(65 + i) for i in range(26)}
    config = transformers.ViTConfig(
        image_size=32,
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=26,
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
    )
    transformers.ViTForImageClassification(config).save_pretrained(folder)
    transformers.ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(folder)
    return folder
