"""The competition's weighted scoring and ranking (scoring-and-ranking-script 2.0.0 semantics).

For trial ``i``, letter ``j``, program ``k`` (``T`` configured trials, ``C`` letters, ``P`` programs,
baselines included in ``P`` as in 2024):

* ``w_sta_j = max(1 - sum_k sum(all stability raws) / (P*T), 1/C)``; ``w_sim_j`` likewise over all
  similarity trials; ``w_div_j = max(1 - sum_k div_jk / P, 1/C)``; ``weight_j`` = their product.
* ``trial_ijk = weight_j * sta_ijk * sim_ijk``; ``char_jk = (sum_i trial_ijk / T) * div_jk``;
  ``prompt_k = sum_j char_jk / C``; ``normalized_k = prompt_k / sum_k prompt_k * 100``.

Two arithmetics: ``float`` (fast, ~1e-15 relative) and ``exact`` which reproduces bignumber.js:
JSON numbers enter through their shortest round-trip text (what ``new BigNumber(number)`` sees),
additions and multiplications are exact, every division is rounded to 20 decimal places half-up,
and values print like ``toFixed()``. The operation order matches the official script, so exact mode
reproduces the published strings digit for digit.

Differences from the official script, on purpose: a missing or unreadable input counts as 0 *and is
listed* (the script silently aborts or logs); and ranking implements the published policy the
script leaves out: ties on the top score go to the shortest prompt (total characters of all prompt
turns after ``<OBJECT>`` substitution, see
:meth:`worldforge.pcg.programs.prompt.PromptProgram.prompt_length`), then co-winners, and a winner is
declared only when it beats the zero-shot baseline (so never when that baseline was not scored).

Like the official script, a letter whose stability, similarity or diversity input is missing (or
unreadable) scores *all three* as empty defaults: its trial rows and character averages are 0, not
the surviving files' values. The script reads a letter's three files in one ``try`` block and
falls back to empty data when any read fails, while its weight pass reads every file on its own, so
the surviving files still count in the weights here too. The unused inputs are listed as well.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Context, Decimal, Inexact
from fractions import Fraction
from typing import NotRequired, TypedDict, Union

from worldforge.core.errors import WorldForgeError
from worldforge.pcg.letters import LETTERS

DECIMAL_PLACES = 20
Number = Union[Decimal, float]  # noqa: UP007 - used at run time in isinstance-free annotations
#: What :meth:`Arithmetic.num` takes: a JSON-parsed number (``int``/``float``), a ``Decimal`` or
#: the text of a number.
Operand = Union[float, Decimal, str]  # noqa: UP007 - a runtime alias, like Number
_EXACT = Context(prec=100_000, traps=[Inexact])


class MissingInput(TypedDict):
    """An input scored as 0 and listed: which program and input, and why; per letter (and trial)
    for one model's files, per model when a model's results lack the program."""

    program: str
    input: str
    reason: str
    character: NotRequired[str]
    trial: NotRequired[int]
    model: NotRequired[str]


class RankEntryPayload(TypedDict):
    program: str
    normalized_score: str
    prompt_length: int | None
    baseline: bool
    rank: int | None


class RankingPayload(TypedDict):
    """:meth:`Ranking.to_dict`: the ranking as the report files carry it (scores as text)."""

    entries: list[RankEntryPayload]
    winners: list[str]
    leaders: list[str]
    decided_by: str
    zero_shot_baseline: str | None
    winner_beats_zero_shot: bool | None
    tie_break_measure: str


def to_fixed(value: Decimal) -> str:
    """bignumber.js ``toFixed()``: plain decimal notation, no exponent, no trailing zeros."""
    if value.is_zero():
        return "0"
    text = format(value.normalize(_EXACT), "f")
    return text


class Arithmetic:
    """Float arithmetic; :class:`ExactArithmetic` overrides every operation with bignumber rules."""

    exact = False

    def num(self, value: Operand) -> Number:
        """A JSON-parsed number (``int``/``float``/``Decimal``/``str``) as an operand."""
        if isinstance(value, bool) or value is None:
            raise WorldForgeError(f"expected a number, got {value!r}.")
        return float(value)

    def zero(self) -> Number:
        return self.num(0)

    def add(self, a: Number, b: Number) -> Number:
        return a + b  # type: ignore[operator]

    def sub(self, a: Number, b: Number) -> Number:
        return a - b  # type: ignore[operator]

    def mul(self, a: Number, b: Number) -> Number:
        return a * b  # type: ignore[operator]

    def div(self, a: Number, b: Number) -> Number:
        return a / b  # type: ignore[operator]

    def text(self, value: Number) -> str:
        """Printed like ``toFixed()`` so float and exact outputs share one format."""
        return to_fixed(Decimal(repr(float(value))))

    def to_float(self, value: Number) -> float:
        return float(value)


class ExactArithmetic(Arithmetic):
    """bignumber.js defaults: exact ``plus``/``times``, ``div`` to 20 places half-up."""

    exact = True

    def num(self, value: Operand) -> Decimal:
        if isinstance(value, bool) or value is None:
            raise WorldForgeError(f"expected a number, got {value!r}.")
        if isinstance(value, float):
            return Decimal(repr(value))  # JS String(number): shortest round-trip digits
        if isinstance(value, (int, Decimal)):
            return Decimal(value)
        return Decimal(str(value))

    def add(self, a: Number, b: Number) -> Decimal:
        return _EXACT.add(a, b)  # type: ignore[arg-type]

    def sub(self, a: Number, b: Number) -> Decimal:
        return _EXACT.subtract(a, b)  # type: ignore[arg-type]

    def mul(self, a: Number, b: Number) -> Decimal:
        return _EXACT.multiply(a, b)  # type: ignore[arg-type]

    def div(self, a: Number, b: Number) -> Decimal:
        if b == 0:
            raise WorldForgeError("division by zero in exact scoring.")
        q = Fraction(a) / Fraction(b)
        scaled = q * 10**DECIMAL_PLACES
        floor = scaled.numerator // scaled.denominator
        rest = scaled - floor
        # half-up = away from zero at exactly .5
        if q >= 0:
            digits = floor + (1 if rest >= Fraction(1, 2) else 0)
        else:
            digits = floor + (1 if rest > Fraction(1, 2) else 0)
        return Decimal(digits).scaleb(-DECIMAL_PLACES, _EXACT)

    def text(self, value: Number) -> str:
        return to_fixed(Decimal(value))


def arithmetic(exact: bool) -> Arithmetic:
    """The float or the exact (bignumber.js) arithmetic."""
    return ExactArithmetic() if exact else Arithmetic()


def trial_index(name: str) -> int | None:
    """Official trial-index rule: last ``_`` part, cut at the first ``.``, JS ``parseInt``."""
    part = name.replace("\\", "/").split("/")[-1].split("_")[-1].split(".")[0].lstrip()
    sign = 1
    if part[:1] in "+-" and part:
        sign = -1 if part[0] == "-" else 1
        part = part[1:]
    digits = ""
    for ch in part:
        if not ch.isdigit() or not ch.isascii():
            break
        digits += ch
    return sign * int(digits) if digits else None


@dataclass
class ProgramData:
    """What the score stage reads for one program (team/prompt folder) and one model.

    ``stability[C]`` are ``(tag, score)`` of every ``raws`` entry, ``similarity[C]`` the ``(id,
    similarity)`` of every ``trials`` entry, ``diversity[C]`` the ``diversityRate``; a letter absent
    from a mapping is a missing file. ``missing`` lists inputs that could not be read (JSON-native).
    """

    name: str
    stability: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    similarity: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    diversity: dict[str, float] = field(default_factory=dict)
    missing: list[MissingInput] = field(default_factory=list)
    prompt_length: int | None = None


@dataclass(frozen=True)
class CharacterWeight:
    character: str
    weight: Number
    stability: Number
    similarity: Number
    diversity: Number


@dataclass(frozen=True)
class TrialRow:
    program: str
    character: str
    trial: int
    score: Number
    stability: Number
    similarity: Number
    diversity: Number


@dataclass(frozen=True)
class CharacterRow:
    program: str
    character: str
    score: Number
    mean_stability: Number
    mean_similarity: Number
    diversity: Number


@dataclass(frozen=True)
class ProgramScore:
    program: str
    prompt: Number
    normalized: Number
    official_rank: int


@dataclass
class CompetitionScores:
    """Everything the score stage computes for one model."""

    arithmetic: Arithmetic
    trials: int
    characters: tuple[str, ...]
    weights: list[CharacterWeight]
    trial_rows: list[TrialRow]
    character_rows: list[CharacterRow]
    programs: list[ProgramScore]  # official order: normalized score descending, stable
    competition: Number
    missing: list[MissingInput]
    prompt_lengths: dict[str, int | None]


def _missing(program: str, character: str, kind: str, reason: str, trial: int | None = None) -> MissingInput:
    entry: MissingInput = {"program": program, "character": character, "input": kind, "reason": reason}
    if trial is not None:
        entry["trial"] = trial
    return entry


def score_competition(
    programs: Sequence[ProgramData],
    *,
    trials: int = 10,
    exact: bool = False,
    characters: Sequence[str] = LETTERS,
) -> CompetitionScores:
    """Weights, trial/character/prompt scores and normalized scores for one model's programs."""
    if not programs:
        raise WorldForgeError("source: no program folders to score.")
    if trials < 1:
        raise WorldForgeError(f"trials: must be >= 1, got {trials}.")
    names = [p.name for p in programs]
    if len(set(names)) != len(names):
        raise WorldForgeError("programs: duplicate program names.")
    ar = arithmetic(exact)
    chars = tuple(characters)
    n_prog, n_char = len(programs), len(chars)
    floor = ar.div(ar.num(1), ar.num(n_char))
    one = ar.num(1)

    def weight_of(total: Number, count: int) -> Number:
        value = ar.sub(one, ar.div(total, ar.num(count)))
        return value if value > floor else floor

    weights: list[CharacterWeight] = []
    for c in chars:
        sta_sum, sim_sum, div_sum = ar.zero(), ar.zero(), ar.zero()
        for p in programs:
            for _, raw_sta in p.stability.get(c, []):
                sta_sum = ar.add(sta_sum, ar.num(raw_sta))
            for _, raw_sim in p.similarity.get(c, []):
                sim_sum = ar.add(sim_sum, ar.num(raw_sim))
            div_sum = ar.add(div_sum, ar.num(p.diversity.get(c, 0)))
        w_sta = weight_of(sta_sum, n_prog * trials)
        w_sim = weight_of(sim_sum, n_prog * trials)
        w_div = weight_of(div_sum, n_prog)
        weights.append(CharacterWeight(c, ar.mul(ar.mul(w_sta, w_sim), w_div), w_sta, w_sim, w_div))

    trial_rows: list[TrialRow] = []
    char_rows: list[CharacterRow] = []
    missing: list[MissingInput] = []
    prompt_scores: list[Number] = []
    zero = ar.zero()
    for p in programs:
        missing.extend(p.missing)
        char_sum = ar.zero()
        for cw in weights:
            c = cw.character
            raws = p.stability.get(c)
            sims = p.similarity.get(c)
            div = ar.num(p.diversity.get(c, 0))
            present = {
                "stability": raws is not None,
                "similarity": sims is not None,
                "diversity": c in p.diversity,
            }
            absent = [kind for kind, ok in present.items() if not ok]
            for kind in absent:
                missing.append(_missing(p.name, c, kind, "file missing"))
            if absent:
                # Official rule: one missing file empties all three inputs of the letter for scoring
                # (the weights above still used every file that was read).
                reason = f"not scored: its {' and '.join(absent)} input is missing or unreadable"
                missing.extend(_missing(p.name, c, kind, reason) for kind, ok in present.items() if ok)
                raws, sims, div = None, None, zero
            trial_sum, sta_sum, sim_sum = ar.zero(), ar.zero(), ar.zero()
            for n in range(1, trials + 1):
                sta_v = next((s for tag, s in raws or [] if trial_index(tag) == n), None)
                sim_v = next((s for tid, s in sims or [] if trial_index(tid) == n), None)
                if raws is not None and sta_v is None:
                    missing.append(_missing(p.name, c, "stability", "trial missing", n))
                if sims is not None and sim_v is None:
                    missing.append(_missing(p.name, c, "similarity", "trial missing", n))
                sta = zero if sta_v is None else ar.num(sta_v)
                sim = zero if sim_v is None else ar.num(sim_v)
                score = ar.mul(ar.mul(cw.weight, sta), sim)
                trial_rows.append(TrialRow(p.name, c, n, score, sta, sim, div))
                trial_sum = ar.add(trial_sum, score)
                sta_sum = ar.add(sta_sum, sta)
                sim_sum = ar.add(sim_sum, sim)
            t = ar.num(trials)
            char_score = ar.mul(ar.div(trial_sum, t), div)
            char_rows.append(CharacterRow(p.name, c, char_score, ar.div(sta_sum, t), ar.div(sim_sum, t), div))
            char_sum = ar.add(char_sum, char_score)
        prompt_scores.append(ar.div(char_sum, ar.num(n_char)))

    competition = ar.zero()
    for s in prompt_scores:
        competition = ar.add(competition, s)
    divider = competition if competition != 0 else ar.num(1)
    hundred = ar.num(100)
    normalized = [ar.mul(ar.div(s, divider), hundred) for s in prompt_scores]
    order = sorted(range(n_prog), key=lambda i: normalized[i], reverse=True)  # stable for ties
    ranked = [
        ProgramScore(programs[i].name, prompt_scores[i], normalized[i], rank)
        for rank, i in enumerate(order, start=1)
    ]
    return CompetitionScores(
        arithmetic=ar,
        trials=trials,
        characters=chars,
        weights=weights,
        trial_rows=trial_rows,
        character_rows=char_rows,
        programs=ranked,
        competition=competition,
        missing=missing,
        prompt_lengths={p.name: p.prompt_length for p in programs},
    )


# ----------------------------------------------------------------------------------------------
# Ranking policy (published; not implemented by the official script)


def is_baseline_name(name: str) -> bool:
    """2024 baseline folders are ``baseline_zero_shot`` and ``baseline_zero_shot_multi_turn``."""
    return name.lower().startswith("baseline")


def is_zero_shot_name(name: str) -> bool:
    """The weak (zero-shot, single-turn) baseline's folder name."""
    return name.lower().replace("-", "_") in {"baseline_zero_shot", "zero_shot"}


@dataclass(frozen=True)
class RankEntry:
    program: str
    score: Number
    prompt_length: int | None
    baseline: bool
    rank: int | None  # None for baselines: they are scored (and count in P) but not ranked


@dataclass(frozen=True)
class Ranking:
    entries: tuple[RankEntry, ...]
    winners: tuple[str, ...]
    #: "score", "shortest-prompt", "co-winners", "below-zero-shot", "no-zero-shot-baseline" or "none"
    decided_by: str
    zero_shot: str | None
    beats_zero_shot: bool | None
    #: The top-ranked program(s) whether or not they overcome the zero-shot baseline; ``winners``
    #: is empty when they do not (the ranking policy declares no winner then).
    leaders: tuple[str, ...] = ()

    def to_dict(self, ar: Arithmetic) -> RankingPayload:
        return {
            "entries": [
                {
                    "program": e.program,
                    "normalized_score": ar.text(e.score),
                    "prompt_length": e.prompt_length,
                    "baseline": e.baseline,
                    "rank": e.rank,
                }
                for e in self.entries
            ],
            "winners": list(self.winners),
            "leaders": list(self.leaders),
            "decided_by": self.decided_by,
            "zero_shot_baseline": self.zero_shot,
            "winner_beats_zero_shot": self.beats_zero_shot,
            "tie_break_measure": "total characters of all prompt turns after <OBJECT> substitution",
        }


def rank_programs(
    scores: Sequence[tuple[str, Number]],
    *,
    prompt_lengths: Mapping[str, int | None] | None = None,
    baselines: Sequence[str] | None = None,
    zero_shot: str | None = None,
) -> Ranking:
    """Rank by score descending; equal scores -> shorter prompt first; still equal -> shared rank.

    A program ranks ahead of another when its score is higher, or equal with a known and shorter
    prompt. Programs that are equal on both share a rank (co-winners at the top). Baselines get no
    rank. ``beats_zero_shot`` compares the leaders' score with the zero-shot baseline's; the policy
    declares a winner only when the leader overcomes that baseline (strictly higher score), so
    ``winners`` is empty (``decided_by == "below-zero-shot"``) when it does not. Without a zero-shot
    baseline in the cohort the condition cannot be checked, so no winner is declared either
    (``decided_by == "no-zero-shot-baseline"``, ``beats_zero_shot`` is ``None``): declaring the
    leaders winners would claim something the run never measured. ``leaders`` always names the
    top-ranked program(s).
    """
    lengths = dict(prompt_lengths or {})
    base = set(baselines) if baselines is not None else {n for n, _ in scores if is_baseline_name(n)}
    zs = zero_shot if zero_shot is not None else next((n for n, _ in scores if is_zero_shot_name(n)), None)

    def ahead(a: tuple[str, Number], b: tuple[str, Number]) -> bool:
        if a[1] != b[1]:
            return bool(a[1] > b[1])
        la, lb = lengths.get(a[0]), lengths.get(b[0])
        return la is not None and lb is not None and la < lb

    competitors = [s for s in scores if s[0] not in base]
    ranks = {name: 1 + sum(ahead(o, (name, sc)) for o in competitors) for name, sc in competitors}
    # Score descending (stable), then within equal scores ranked programs by rank, baselines last.
    order = sorted(scores, key=lambda s: (s[0] in base, ranks.get(s[0], 0)))
    order.sort(key=lambda s: s[1], reverse=True)
    entries = tuple(RankEntry(n, sc, lengths.get(n), n in base, ranks.get(n)) for n, sc in order)
    leaders = tuple(n for n, _ in competitors if ranks[n] == 1)
    if not leaders:
        decided = "none"
    else:
        top = [s for s in competitors if s[1] == dict(competitors)[leaders[0]]]
        decided = "score" if len(top) == 1 else ("co-winners" if len(leaders) > 1 else "shortest-prompt")
    beats: bool | None = None
    if leaders and zs is not None and zs in dict(scores):
        beats = bool(dict(scores)[leaders[0]] > dict(scores)[zs])
    winners = leaders
    if beats is False:
        winners, decided = (), "below-zero-shot"
    elif beats is None and leaders:
        winners, decided = (), "no-zero-shot-baseline"
    return Ranking(entries, winners, decided, zs if zs in dict(scores) else None, beats, leaders)


def ranking_for(
    result: CompetitionScores,
    *,
    prompt_lengths: Mapping[str, int | None] | None = None,
    baselines: Sequence[str] | None = None,
    zero_shot: str | None = None,
) -> Ranking:
    """:func:`rank_programs` over one model's normalized scores and (unless given) the prompt
    lengths recorded with them."""
    return rank_programs(
        [(p.program, p.normalized) for p in result.programs],
        prompt_lengths=result.prompt_lengths if prompt_lengths is None else prompt_lengths,
        baselines=baselines,
        zero_shot=zero_shot,
    )


# ----------------------------------------------------------------------------------------------
# Several models (2025): per-model prompt scores summed, normalized by the grand total


@dataclass
class MultiModelScores:
    arithmetic: Arithmetic
    models: tuple[str, ...]
    per_model: dict[str, dict[str, Number]]  # program -> model -> prompt score
    totals: dict[str, Number]
    normalized: dict[str, Number]
    normalized_per_model: dict[str, dict[str, Number]]
    competition: Number
    missing: list[MissingInput]


def combine_models(results: Mapping[str, CompetitionScores]) -> MultiModelScores:
    """``total_k = sum_m prompt_{k,m}``; ``normalized_k = total_k / sum_k total_k * 100``.

    Weights are computed per model (each model's scoring is the single-model process). A program
    absent for a model counts 0 for it and is listed in ``missing``.
    """
    if not results:
        raise WorldForgeError("models: nothing to combine.")
    exacts = {r.arithmetic.exact for r in results.values()}
    if len(exacts) != 1:
        raise WorldForgeError("models: mix of exact and float scoring.")
    ar = next(iter(results.values())).arithmetic
    names: list[str] = []
    for r in results.values():
        names.extend(p.program for p in r.programs if p.program not in names)
    names.sort()
    per_model: dict[str, dict[str, Number]] = {n: {} for n in names}
    missing: list[MissingInput] = []
    for model, r in results.items():
        scores = {p.program: p.prompt for p in r.programs}
        for n in names:
            if n not in scores:
                missing.append({"program": n, "model": model, "input": "model results", "reason": "missing"})
            per_model[n][model] = scores.get(n, ar.zero())
    totals: dict[str, Number] = {}
    for n in names:
        total = ar.zero()
        for model in results:
            total = ar.add(total, per_model[n][model])
        totals[n] = total
    competition = ar.zero()
    for n in names:
        competition = ar.add(competition, totals[n])
    divider = competition if competition != 0 else ar.num(1)
    hundred = ar.num(100)
    return MultiModelScores(
        arithmetic=ar,
        models=tuple(results),
        per_model=per_model,
        totals=totals,
        normalized={n: ar.mul(ar.div(totals[n], divider), hundred) for n in names},
        normalized_per_model={
            n: {m: ar.mul(ar.div(per_model[n][m], divider), hundred) for m in results} for n in names
        },
        competition=competition,
        missing=missing,
    )


__all__ = [
    "DECIMAL_PLACES",
    "Arithmetic",
    "CharacterRow",
    "CharacterWeight",
    "CompetitionScores",
    "ExactArithmetic",
    "MissingInput",
    "MultiModelScores",
    "Operand",
    "ProgramData",
    "ProgramScore",
    "RankEntry",
    "RankEntryPayload",
    "Ranking",
    "RankingPayload",
    "TrialRow",
    "arithmetic",
    "combine_models",
    "is_baseline_name",
    "is_zero_shot_name",
    "rank_programs",
    "ranking_for",
    "score_competition",
    "to_fixed",
    "trial_index",
]
