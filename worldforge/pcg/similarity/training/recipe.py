"""Train the bundled letter classifier on independent letter families; measure leave-one-family-out.

Data: six training families that share no glyph source (:mod:`.families`: the mock
glyph programs, outline fonts, a bitmap font, hand-written stroke skeletons with alternate letter
shapes, letters laid as bars, legs and staircases on the block grid, the X11 100 dpi bitmap faces
of :mod:`.dpi`) plus one family that is never trained on (letters drawn by hand on the block grid).
Before anything is generated, the installed font files are compared with the ones the shipped
corpus was drawn from (``glyph_sources`` in the dataset manifest, :mod:`.sources`): a file that
differs is named and the run stops, unless ``--accept-glyph-sources``. Every program goes through
the project's own converter, Box2D simulation and similarity render, so shifted, leaning and partly
collapsed letters are in the data as they appear at evaluation time; heaps (more than a quarter of
the blocks moved by over a cell) are excluded (:mod:`.loop`).

Measurement:
* leave-one-family-out: for every training family F, a model trained on the other five (shorter
  schedule, ``--lofo-epochs``) is tested on all of F's levels, with its whole confusion matrix;
* the shipped model (all six families, ``--epochs``) is tested on held-out seeds of every family
  and on the hand-drawn family, through ``worldforge.pcg.similarity.classifier.load_classifier`` on the
  full-size PNG renders (processor-exact, as the similarity stage);
* per-letter accuracy, top confusions and expected calibration error (15 bins) everywhere; the
  shipped head is temperature-scaled on the held-out seeds (the temperature is folded into the
  weights, so the checkpoint format does not change), and each fold's model is measured again at a
  temperature fitted the same way on the held-out seeds of the families it trained on
  (``test_calibrated``: the held-out family's calibration with a temperature chosen without it),
  and at the temperature fitted on the other folds' held-out families (``test_crossfold``,
  :mod:`.calibration`: fitted where models read styles they never trained on);
* the frozen evaluation-only family (:mod:`.unseen`: another glyph source, another placement
  rule, stored programs) is measured by every fold and by the shipped model (``unseen`` in the
  results file); it is never trained on and chooses nothing.

Outputs: the checkpoint and its card in ``worldforge/pcg/assets/letter-classifier/``, the results
JSON ``docs/classifier.json`` and the dataset manifest ``dataset-manifests/letter-classifier.json``
(families, corpus digest). Deterministic for a given seed, machine and thread count (CPU only).

    nice -n 10 .venv/bin/python -m worldforge.pcg.similarity.training   # about 45 min on 2 idle cores
    .venv/bin/python -m worldforge.pcg.similarity.training --quick        # smoke run into /tmp

The card and the dataset manifest (:mod:`.card`) are written from the training record alone, so a
rerun reproduces them byte for byte.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from worldforge import heavy
from worldforge.core.canonical import pretty_json
from worldforge.core.digests import digest_bytes, digest_file, digest_payload
from worldforge.core.io import atomic_write_text
from worldforge.pcg.levels.drop_plan import simulate_drops
from worldforge.pcg.similarity import measures
from worldforge.pcg.similarity.training import calibration, card, sources, unseen
from worldforge.pcg.similarity.training import families as lf
from worldforge.pcg.similarity.training import loop as lt
from worldforge.pcg.similarity.training.grids import beside_ink
from worldforge.pcg.similarity.training.records import (
    CorpusSummary,
    FoldResult,
    TrainingMeta,
)

ROOT = Path(__file__).resolve().parents[4]
DEFAULT_OUT = ROOT / "worldforge" / "pcg" / "assets" / "letter-classifier"
DEFAULT_MANIFEST = ROOT / "dataset-manifests" / "letter-classifier.json"
DEFAULT_RESULTS = ROOT / "docs" / "classifier.json"
HELDOUT_SEED_BASE = 100_000  # held-out programs use seeds >= this; training seeds start at 0


#: Seeds per program-generation job (26 levels each): small enough to keep both workers busy to
#: the end, as the families differ in cost (the ``font`` family redraws most).
SEED_CHUNK = 25


def _corpus_chunk(job: tuple[str, range]) -> tuple[list[str], list[int], list[bool]]:
    """Programs, labels and beside-ink flags of one family for a range of seeds (a worker's job)."""
    family, seeds = job
    programs, labels, beside = [], [], []
    for _, label, grid, program in lf.corpus_levels(family, seeds):
        programs.append(program)
        labels.append(label)
        beside.append(beside_ink(grid, simulate_drops(program)) > 0)
    return programs, labels, beside


def recorded_sources(manifest: Path) -> dict[str, sources.FamilySources]:
    """The glyph sources a dataset manifest records (none for a missing manifest or an older one)."""
    if not manifest.is_file():
        return {}
    payload = json.loads(manifest.read_text(encoding="utf-8"))
    metadata = payload.get("metadata") if isinstance(payload, dict) else None
    if not isinstance(metadata, dict) or "glyph_sources" not in metadata:
        return {}
    return sources.parse_record(metadata["glyph_sources"], f"{manifest}: metadata")


def build_splits(train_seeds: int, heldout_seeds: int, workers: int = 1) -> list[lt.Split]:
    """Every family's training and held-out split, then the hand-drawn one.

    Generating the programs takes minutes on one core (the ``font`` family's redraws, one drop
    simulation per level for the beside-ink flag), so chunks of seeds go to ``workers`` processes;
    the chunks are put back in order, so every split is the same for any number of workers.
    """
    plan: list[tuple[lt.Split, int]] = []
    jobs: list[tuple[str, range]] = []
    for family in lf.TRAIN_FAMILIES:
        for name, seeds in (
            ("train", range(train_seeds)),
            ("heldout", range(HELDOUT_SEED_BASE, HELDOUT_SEED_BASE + heldout_seeds)),
        ):
            chunks = [
                range(s, min(s + SEED_CHUNK, seeds.stop)) for s in range(seeds.start, seeds.stop, SEED_CHUNK)
            ]
            plan.append((lt.Split(family, name), len(chunks)))
            jobs += [(family, chunk) for chunk in chunks]
    if workers > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(_corpus_chunk, jobs))
    else:
        results = [_corpus_chunk(job) for job in jobs]
    splits: list[lt.Split] = []
    parts = iter(results)
    for split, count in plan:
        for _ in range(count):
            programs, labels, beside = next(parts)
            split.programs += programs
            split.labels += labels
            split.beside += beside
        splits.append(split)
    hand = lt.Split("hand", "eval")
    for _, letter, grid, program in lf.handdrawn_levels():
        hand.programs.append(program)
        hand.labels.append(lf.LETTERS.index(letter))
        hand.beside.append(beside_ink(grid, simulate_drops(program)) > 0)
    splits.append(hand)
    return splits


def pick(splits: list[lt.Split], *, family: str | None = None, split: str | None = None) -> list[lt.Split]:
    return [
        s for s in splits if (family is None or s.family == family) and (split is None or s.split == split)
    ]


def leave_one_family_out(
    splits: list[lt.Split], frozen: lt.Split, args: argparse.Namespace
) -> dict[str, FoldResult]:
    """Train without F, test on every (non-heap) level of F, for every training family F.

    The folds are independent: ``--fold-workers`` processes run them side by side, each with
    ``--threads`` divided among them (a model this small uses one core better than two threads).
    The folds of a last, partial round (the fifth of five on two workers) share the threads among
    fewer, so no core idles while they run, and start when the full rounds are done: started as
    soon as one worker was free, the fifth fold's two threads shared the cores with the fold still
    running (three threads on two cores), which slowed both (fold epochs of 75-95 s against 45-55).
    A fold's figures depend on its thread count, not on when it runs.
    """
    hand = lt.as_tensor(pick(splits, family="hand"))
    frozen_set = lt.as_tensor([frozen])
    jobs = []
    held_out = args.folds or lf.TRAIN_FAMILIES
    workers = max(1, args.fold_workers)
    last_round = len(held_out) - len(held_out) % workers
    for k, held in enumerate(held_out):
        sharing = workers if k < last_round else len(held_out) - last_round
        train = [s for s in pick(splits, split="train") if s.family != held]
        jobs.append(
            lt.FoldJob(
                label=f"lofo-{held}",
                train=lt.as_tensor(train),
                tests={
                    "test": lt.as_tensor(pick(splits, family=held)),
                    # The same levels split by whether the build changed the letter's outline.
                    "test_beside_ink": lt.as_tensor(pick(splits, family=held), beside=True),
                    "test_as_drawn": lt.as_tensor(pick(splits, family=held), beside=False),
                    "hand": hand,
                    "unseen": frozen_set,
                },
                calibration=lt.as_tensor([s for s in pick(splits, split="heldout") if s.family != held]),
                keep_logits=("test", "unseen"),
                epochs=args.lofo_epochs,
                seed=args.seed,
                lr=args.lr,
                threads=max(1, args.threads // sharing),
            )
        )
    outcomes = lt.run_folds(jobs[:last_round], workers) + lt.run_folds(jobs[last_round:], workers)
    crossfold = calibration.crossfold(
        {held: o.logits["test"] for held, o in zip(held_out, outcomes, strict=True)},
        {held: {"unseen": o.logits["unseen"]} for held, o in zip(held_out, outcomes, strict=True)},
    )
    if args.save_logits is not None:
        save_logits(args.save_logits, dict(zip(held_out, outcomes, strict=True)))
    folds: dict[str, FoldResult] = {}
    for held, job, outcome in zip(held_out, jobs, outcomes, strict=True):
        result = outcome.metrics
        train = [s for s in pick(splits, split="train") if s.family != held]
        folds[held] = {  # the test sets in the order of ``job.tests``
            "trained_on": sorted({s.family for s in train}),
            "train_levels": len(job.train[1]),
            "test": result["test"],
            "test_beside_ink": result["test_beside_ink"],
            "test_as_drawn": result["test_as_drawn"],
            "hand": result["hand"],
            "test_calibrated": result["test_calibrated"],
            "unseen": result["unseen"],
            "unseen_calibrated": result["unseen_calibrated"],
        }
        if held in crossfold:  # one fold alone has no other held-out family to fit on
            folds[held]["test_crossfold"] = crossfold[held]["test_crossfold"]
            folds[held]["unseen_crossfold"] = crossfold[held]["unseen_crossfold"]
        print(
            f"LOFO {held}: {folds[held]['test']['accuracy']} (hand {folds[held]['hand']['accuracy']}, "
            f"ECE {folds[held]['test']['ece']} -> {folds[held]['test_calibrated']['ece']} at "
            f"T = {folds[held]['test_calibrated'].get('temperature')}, cross-fold "
            f"{folds[held].get('test_crossfold', {}).get('ece')})",
            file=sys.stderr,
        )
    return folds


def save_logits(path: Path, outcomes: dict[str, lt.FoldOutcome]) -> None:
    """Every fold's raw logits and targets on its held-out family and on the frozen family
    (``<family>/<set>/logits|target`` in one ``torch.save`` file), for calibration studies that
    would otherwise need the folds trained again. Not a product of the run: nothing digests it."""
    torch = heavy.torch()

    payload = {
        f"{held}/{name}/{part}": tensor
        for held, outcome in outcomes.items()
        for name, pair in outcome.logits.items()
        for part, tensor in zip(("logits", "target"), pair, strict=True)
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(payload, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m worldforge.pcg.similarity.training", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST)
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--train-seeds", type=int, default=250, help="training programs per letter and family"
    )
    parser.add_argument(
        "--heldout-seeds", type=int, default=3, help="held-out programs per letter and family"
    )
    parser.add_argument("--epochs", type=int, default=16, help="epochs of the shipped model")
    parser.add_argument("--lofo-epochs", type=int, default=8, help="epochs of each leave-one-family-out fold")
    parser.add_argument("--lr", type=float, default=4e-3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--fold-workers", type=int, default=2, help="leave-one-family-out folds trained side by side"
    )
    parser.add_argument(
        "--baseline", type=Path, help="also measure this checkpoint folder on the same images"
    )
    parser.add_argument("--cache", type=Path, help="folder for rendered corpora")
    parser.add_argument("--no-lofo", action="store_true", help="skip the leave-one-family-out folds")
    parser.add_argument(
        "--save-logits", type=Path, help="also save every fold's held-out logits here (torch.save)"
    )
    parser.add_argument(
        "--folds",
        type=lambda text: tuple(text.split(",")),
        help="comma-separated families to hold out (default: every training family; fewer is an "
        "experiment: the card's lowest fold then covers only these)",
    )
    parser.add_argument("--no-manifest", action="store_true", help="do not write the dataset manifest")
    parser.add_argument(
        "--accept-glyph-sources",
        action="store_true",
        help="rebuild even when installed font files differ from the shipped corpus's (its manifest then "
        "records the new ones)",
    )
    parser.add_argument("--quick", action="store_true", help="tiny smoke run into /tmp (no manifest)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.folds or ()) - set(lf.TRAIN_FAMILIES))
    if unknown:
        parser.error(f"--folds: {unknown[0]!r} is not a training family ({', '.join(lf.TRAIN_FAMILIES)})")
    if args.no_manifest:
        args.manifest = None
    if args.quick:
        args.out, args.manifest = Path("/tmp/letter-classifier-quick"), None
        args.results = Path("/tmp/letter-classifier-quick/classifier.json")
        args.train_seeds, args.heldout_seeds, args.epochs, args.lofo_epochs = 2, 1, 1, 1
    if args.manifest is not None and not args.out.resolve().is_relative_to(ROOT.resolve()):
        # Checked before the run, not after it: the manifest names the checkpoint's files by their
        # path in the project, which a folder outside it does not have.
        parser.error(
            f"--out {args.out}: outside the project; the dataset manifest cannot name it (add --no-manifest)"
        )

    if not args.accept_glyph_sources:
        try:
            sources.check(recorded_sources(DEFAULT_MANIFEST))
        except sources.GlyphSourceMismatch as error:
            parser.error(f"{error} (rebuild anyway with --accept-glyph-sources)")

    torch = heavy.torch()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    begin = time.monotonic()
    load = os.getloadavg()
    splits = build_splits(args.train_seeds, args.heldout_seeds, args.workers)
    # The frozen evaluation-only family renders with the corpus but is in none of its digests.
    frozen = unseen.unseen_split()
    lt.render_splits([*splits, frozen], args.workers, args.cache)
    render_s = time.monotonic() - begin
    folds = {} if args.no_lofo else leave_one_family_out(splits, frozen, args)
    lofo_s = time.monotonic() - begin - render_s

    data, target = lt.as_tensor(pick(splits, split="train"))
    model = lt.train(data, target, epochs=args.epochs, seed=args.seed, lr=args.lr, label="final")
    val_data, val_target = lt.as_tensor(pick(splits, split="heldout"))
    val_logits = lt.logits_of(model, val_data)
    temperature = lt.fit_temperature(val_logits, val_target)
    before = measures.metrics(lt.softmax_rows(val_logits), val_target.tolist())
    lt.apply_temperature(model, temperature)
    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out)
    lt.processor().save_pretrained(args.out)

    heldout = lt.classify_pngs(args.out, pick(splits, split="heldout"))
    per_family = {
        f: lt.classify_pngs(args.out, pick(splits, family=f, split="heldout")) for f in lf.TRAIN_FAMILIES
    }
    hand = lt.classify_pngs(args.out, pick(splits, family="hand"))
    unseen_figures = {unseen.FAMILY: lt.classify_pngs(args.out, [frozen])}
    baseline = None
    if args.baseline is not None:
        baseline = {
            "weights_digest": digest_file(args.baseline / "model.safetensors"),
            "heldout_per_family": {
                f: lt.classify_pngs(args.baseline, pick(splits, family=f, split="heldout"))
                for f in lf.TRAIN_FAMILIES
            },
            "hand": lt.classify_pngs(args.baseline, pick(splits, family="hand")),
            "unseen": {unseen.FAMILY: lt.classify_pngs(args.baseline, [frozen])},
        }
    train_splits = pick(splits, split="train")
    corpus: CorpusSummary = {
        "families": list(lf.TRAIN_FAMILIES),
        "eval_only_families": list(lf.EVAL_ONLY_FAMILIES),
        "levels": sum(len(s.programs) for s in splits),
        "heaps": {f"{s.family}/{s.split}": lt.heap_stats(s) for s in splits},
        "programs_digest": digest_payload({f"{s.family}/{s.split}": s.programs for s in splits}),
        "train_data_digest": digest_bytes(b"".join(s.small[i] for s in train_splits for i in s.keep)),
        "train_levels": len(target),
    }
    meta: TrainingMeta = {
        "seed": args.seed,
        "epochs": args.epochs,
        "lofo_epochs": args.lofo_epochs,
        "lr": args.lr,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "train_seeds": args.train_seeds,
        "heldout_seeds": args.heldout_seeds,
        "temperature": temperature,
        "corpus": corpus,
        "heldout": heldout,
        "heldout_per_family": per_family,
        "heldout_before_temperature": before,
        "hand": hand,
        "lofo": folds,
        "lofo_min_accuracy": min((f["test"]["accuracy"] for f in folds.values()), default=None),
        "unseen": unseen_figures,
        "weights_digest": digest_file(args.out / "model.safetensors"),
    }
    timing = {
        "seconds": round(time.monotonic() - begin),
        "render_seconds": round(render_s),
        "lofo_seconds": round(lofo_s),
        "threads": args.threads,
        "fold_workers": args.fold_workers,
        "workers": args.workers,
        "load_average_at_start": [round(v, 2) for v in load],
        "load_average_at_end": [round(v, 2) for v in os.getloadavg()],
    }
    atomic_write_text(args.out / "training.json", pretty_json(meta))
    atomic_write_text(args.out / "README.md", card.model_card(meta))
    args.results.parent.mkdir(parents=True, exist_ok=True)
    results = {**meta, "baseline": baseline, "timing": timing}
    atomic_write_text(args.results, pretty_json(results))
    if args.manifest is not None:
        from worldforge.datasets import validate_manifest

        payload = card.manifest(ROOT, args.out, meta)
        validate_manifest(payload, source=str(args.manifest), root=ROOT)
        atomic_write_text(args.manifest, pretty_json(payload))
    print(
        json.dumps(
            {
                "heldout": heldout["accuracy"],
                "hand": hand["accuracy"],
                "lofo": {k: v["test"]["accuracy"] for k, v in folds.items()},
                **timing,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
