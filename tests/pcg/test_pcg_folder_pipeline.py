"""The per-level pipeline and its process pool: failures as data, input order, picklable results."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from worldforge.core.digests import digest_bytes
from worldforge.core.errors import WorldForgeError
from worldforge.pcg.sim.pipeline import LevelOutcome, run_batch, run_level, run_program, run_reply

REF = Path(__file__).parents[1] / "fixtures" / "reference-levels"
FENCE = "```"


def reply(program: str) -> str:
    return f"Sure.\n{FENCE}python\n{program}{FENCE}\n"


REPLIES = [
    reply((REF / "result_22.program.txt").read_text()),
    "no code at all",
    reply("drop_block('b31', 0)\n"),
    reply((REF / "V1_L_1.program.txt").read_text()),
    reply("drop_block('b33', 4)\n"),
    reply((REF / "result_23.program.txt").read_text()),
]


def test_outcomes_carry_failures_as_data() -> None:
    outcomes = [run_reply(r) for r in REPLIES]
    assert [o.failed_stage for o in outcomes] == [None, "extract", "convert", None, "convert", None]
    assert [o.error for o in outcomes] == [
        None,
        "Code not found.",
        "Width boundary is intruded.",
        None,
        "BlockType does not exist.",
        None,
    ]
    assert outcomes[0].xml is not None and outcomes[0].xml.encode() == (REF / "result_22.xml").read_bytes()
    assert (outcomes[3].total_blocks, outcomes[3].moving_blocks, outcomes[3].destroyed_blocks) == (6, 4, 2)
    assert outcomes[0].png is not None and outcomes[0].png.startswith(b"\x89PNG")
    assert outcomes[1].summary() == {
        "ok": False,
        "failed_stage": "extract",
        "error": "Code not found.",
        "total_blocks": 0,
        "moving_blocks": 0,
        "destroyed_blocks": 0,
        "stability": None,
    }


def test_pool_returns_input_order_and_matches_serial() -> None:
    serial = run_batch(REPLIES, kind="reply", workers=1)
    ticks: list[int] = []
    pooled = run_batch(REPLIES, kind="reply", workers=2, progress=ticks.append)
    assert len(ticks) == len(REPLIES)
    assert [o.summary() for o in pooled] == [o.summary() for o in serial]
    assert [digest_bytes(o.png) if o.png else None for o in pooled] == [
        digest_bytes(o.png) if o.png else None for o in serial
    ]


def test_kinds_and_pickling() -> None:
    xml = (REF / "result_24.xml").read_text()
    by_xml = run_level(xml, details=True)
    by_program = run_program((REF / "result_24.program.txt").read_text())
    assert by_xml.png == by_program.png
    assert by_xml.simulation is not None and len(by_xml.simulation["blocks"]) == 4
    clone = pickle.loads(pickle.dumps(by_xml))
    assert isinstance(clone, LevelOutcome) and clone == by_xml
    assert run_level("<Level><GameObjects/></Level>").failed_stage == "simulate"
    with pytest.raises(WorldForgeError):
        run_batch(["x"], kind="nonsense", workers=1)  # type: ignore[arg-type]
    with pytest.raises(WorldForgeError):
        run_batch(["x", "y"], kind="program", workers=0)


def test_dropped_calls_travel_with_the_outcome() -> None:
    out = run_reply(reply("drop_block('b11', 1)\ndrop_block(block_type='b11', x_position=2)\n"))
    assert out.ok
    assert [d["reason"] for d in out.dropped] == ["keyword argument (only positional literals are matched)"]
