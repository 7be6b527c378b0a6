"""Diversity: cosine distance over unordered pairs, divisor T(T+1)/2 - T, missing trials."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worldforge.core.errors import WorldForgeError
from worldforge.pcg.competition.scoring import stage_diversity
from worldforge.pcg.scoring.diversity import cosine_distance, diversity, pair_divisor


def test_divisor_is_pairs_of_configured_trials() -> None:
    assert pair_divisor(10) == 45
    assert pair_divisor(3) == 3
    assert pair_divisor(2) == 1
    with pytest.raises(WorldForgeError):
        pair_divisor(1)


def test_cosine_distance_reference_values() -> None:
    assert cosine_distance([1, 0], [0, 1]) == pytest.approx(1.0)
    assert cosine_distance([1, 0], [1, 0]) == 0.0
    assert cosine_distance([1, 0], [-1, 0]) == pytest.approx(2.0)
    # 1 - (1*2 + 2*1) / (sqrt(5) * sqrt(5)) = 1 - 4/5
    assert cosine_distance([1, 2], [2, 1]) == pytest.approx(0.2)
    with pytest.raises(WorldForgeError, match="zero vector"):
        cosine_distance([0, 0], [1, 0])
    with pytest.raises(WorldForgeError, match="shapes"):
        cosine_distance([1, 0, 0], [1, 0])


def test_missing_trials_lower_the_score_with_the_full_divisor() -> None:
    e = [[1.0 if j == i else 0.0 for j in range(26)] for i in range(10)]
    full = diversity([(f"t_{i}", e[i]) for i in range(10)], configured_trials=10)
    assert full.rate == pytest.approx(1.0)  # 45 orthogonal pairs / 45
    assert len(full.pairs) == 45
    five = diversity([(f"t_{i}", e[i]) for i in range(5)], configured_trials=10)
    assert len(five.pairs) == 10 and five.rate == pytest.approx(10 / 45)
    assert five.divisor == 45 and five.present == 5
    same = diversity([("a", e[0]), ("b", e[0])], configured_trials=10)
    assert same.rate == 0.0 and len(same.pairs) == 1  # identical vectors still pair, at distance 0
    assert [(p.trial1, p.trial2) for p in diversity([("a", e[0]), ("b", e[1]), ("c", e[2])]).pairs] == [
        ("a", "b"),
        ("a", "c"),
        ("b", "c"),
    ]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.floats(min_value=0.001, max_value=1.0), min_size=4, max_size=4),
        min_size=2,
        max_size=6,
    )
)
def test_rate_is_mean_over_full_pair_count(vectors: list[list[float]]) -> None:
    result = diversity([(str(i), v) for i, v in enumerate(vectors)], configured_trials=6)
    expected = 0.0
    for i in range(len(vectors)):
        for j in range(i + 1, len(vectors)):
            u, v = vectors[i], vectors[j]
            dot = sum(a * b for a, b in zip(u, v, strict=True))
            expected += 1 - dot / math.sqrt(sum(a * a for a in u) * sum(b * b for b in v))
    assert result.rate == pytest.approx(max(expected, 0.0) / 15, abs=1e-12)
    assert 0.0 <= result.rate <= 2 * len(result.pairs) / 15


def _similarity_file(path: Path, trials: dict[str, tuple[list[float], list[float]]]) -> None:
    letters = [chr(65 + i) for i in range(26)]
    sims = [
        {
            "id": name,
            "raws": [
                {"id": name, "label": c, "softmax_prob": p}
                for c, p in reversed(list(zip(letters, sm, strict=True)))
            ],
            "cls_embedding": emb,
        }
        for name, (sm, emb) in trials.items()
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"count": len(sims), "similarityRate": 0, "trials": [], "similarities": sims}))


def test_stage_diversity_writes_official_layout_for_both_vectors(tmp_path: Path) -> None:
    sm_a = [1.0] + [0.0] * 25
    sm_b = [0.0, 1.0] + [0.0] * 24
    _similarity_file(
        tmp_path / "team1" / "similarity" / "A.json",
        {"team1_A_1.png": (sm_a, [1.0, 0.0]), "team1_A_2.png": (sm_b, [1.0, 1.0])},
    )
    report = stage_diversity(tmp_path, trials=10, vector="softmax")
    assert report.succeeded == 1 and report.failed == 0
    # the official script's log: <SOURCE>/logs/diversity_log_<time>.txt, one line per file
    assert report.log_path is not None and report.log_path.parent == tmp_path / "logs"
    assert report.log_path.name.startswith("diversity_log_") and ":" not in report.log_path.name
    assert report.log_path.read_text().startswith("team1/similarity/A.json: Succeeded - diversity 0.0222")
    text = (tmp_path / "team1" / "diversity" / "A.json").read_text()
    data = json.loads(text)
    assert list(data) == ["diversityRate", "trials", "diversities", "count", "vector"]
    assert text.startswith('{\n  "diversityRate": ')  # json.dumps(indent=2) like the official script
    # raws are sorted by label A..Z before use, whatever their order in the file
    assert data["trials"][0] == {"trial": "team1_A_1", "vector": sm_a}
    assert data["diversities"] == [{"pair": {"trial1": "team1_A_1", "trial2": "team1_A_2"}, "distance": 1.0}]
    assert data["diversityRate"] == pytest.approx(1 / 45)
    stage_diversity(tmp_path, trials=10, vector="cls")
    data = json.loads((tmp_path / "team1" / "diversity" / "A.json").read_text())
    assert data["vector"] == "embedding"
    assert data["diversityRate"] == pytest.approx((1 - 1 / math.sqrt(2)) / 45)


def test_stage_diversity_reports_unreadable_files(tmp_path: Path) -> None:
    bad = tmp_path / "team1" / "similarity" / "B.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{not json")
    report = stage_diversity(tmp_path, trials=10)
    assert report.failed == 1 and report.failures[0][0] == "team1/similarity/B.json"
    assert report.log_path is not None
    assert report.log_path.read_text().startswith(
        "team1/similarity/B.json: Failed - unreadable similarity file"
    )
    with pytest.raises(WorldForgeError, match="vector"):
        stage_diversity(tmp_path, vector="logits")
