"""The Ray executor on a real two-node cluster (loopback, one CPU per node): the folder stages and
the suite give the bytes and digests of a local run, classifier actors load the model once and give
the local vectors whatever the batches, a worker node killed mid-run (while simulating or while
classifying) changes nothing, and the driver's secrets never reach a worker or an actor. Without
Ray installed, a one-line error names the extra; ``import worldforge`` never imports ray."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.ray_cluster import (
    LocalRayCluster,
    actor_env_value,
    broken_classifier,
    classifier_loads,
    counting_classifier,
    env_value,
)
from worldforge.cli.app import app
from worldforge.core.digests import digest_file
from worldforge.core.errors import WorldForgeError
from worldforge.execution import create_executor, ordered_map
from worldforge.execution.ray import scrubbed_env

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-cluster-test-0123456789abcdefABCDEF"


def test_missing_ray_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(WorldForgeError) as err:
        create_executor("ray", 1)
    assert "worldforge[distributed]" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(WorldForgeError, match="unknown executor 'dask'; choose one of local, ray"):
        create_executor("dask", 1)


def test_worldforge_never_imports_ray_unasked() -> None:
    code = (
        "import sys, worldforge, worldforge.execution, worldforge.cli.app\n"
        "import worldforge.pcg.competition.stages, worldforge.suites.science_birds\n"
        "assert 'ray' not in sys.modules, 'ray imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    help_code = (
        "import sys\nfrom worldforge.cli.app import main\nsys.argv=['worldforge','--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\nassert 'ray' not in sys.modules\n"
    )
    subprocess.run(
        [sys.executable, "-c", help_code],
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
    )


def test_sensitive_driver_variables_are_blanked() -> None:
    env = {"OPENAI_API_KEY": "x", "HF_TOKEN": "y", "PATH": "/bin", "PYTHONPATH": "/src", "HOME": "/root"}
    assert scrubbed_env(env) == {"HF_TOKEN": "", "OPENAI_API_KEY": ""}


def test_ray_token_is_not_blanked_for_workers() -> None:
    env = {"RAY_AUTH_TOKEN": "t", "RAY_AUTH_MODE": "token", "GITHUB_TOKEN": "g"}
    assert scrubbed_env(env) == {"GITHUB_TOKEN": ""}


def test_private_cluster_leaves_the_users_ray_setup_as_found(tmp_path: Path) -> None:
    """Started without an address, the private cluster authenticates with a token of its own that
    never touches the disk: no ``~/.ray/auth_token`` (which would turn token authentication on for
    every cluster the user starts later and make ``ray status`` fail) and Ray's variables restored
    after shutdown, twice in one process."""
    home = tmp_path / "home"
    home.mkdir()
    code = (
        "import os\n"
        "from worldforge.execution.ray import RayExecutor\n"
        "names = ('RAY_AUTH_MODE', 'RAY_AUTH_TOKEN', 'RAY_AUTH_TOKEN_PATH')\n"
        "before = {n: os.environ.get(n) for n in names}\n"
        "for _ in range(2):\n"
        "    ex = RayExecutor(workers=1)\n"
        "    assert os.environ['RAY_AUTH_MODE'] == 'token'\n"
        "    assert ex.submit(pow, 2, 10).result(timeout=120) == 1024\n"
        "    ex.shutdown()\n"
        "    assert {n: os.environ.get(n) for n in names} == before, os.environ\n"
        "print('ok')\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "HOME": str(home), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*")) == []


def test_local_executor_keeps_input_order() -> None:
    local = create_executor("local", 2)
    try:
        assert list(ordered_map(local, abs, list(range(-40, 0)), chunk=3)) == list(range(40, 0, -1))
    finally:
        local.shutdown()


# -- a real cluster --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalRayCluster]:
    pytest.importorskip("ray")
    nodes = LocalRayCluster(env={"OPENAI_API_KEY": SECRET}).start()
    try:
        yield nodes
    finally:
        nodes.stop()


@pytest.fixture()
def ray_executor(cluster: LocalRayCluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    import ray

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    executor = create_executor("ray", 2, address=cluster.address)
    cluster.wait_cpus(ray, 2)
    try:
        yield executor
    finally:
        executor.shutdown()


def _levels(root: Path, n: int) -> Path:
    from worldforge.pcg.levels.convert import convert
    from worldforge.pcg.levels.glyphs import letter_program

    src = root / "competition"
    for i in range(n):
        letter = chr(65 + i % 26)
        path = src / "team" / "levels" / letter / f"{i // 26 + 1}.xml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(convert(letter_program(letter, 100 + i)), encoding="utf-8")
    return src


def _outputs(src: Path) -> dict[str, str]:
    return {
        p.relative_to(src).as_posix(): digest_file(p)
        for p in sorted(src.rglob("*"))
        if p.is_file() and ("/stability/" in p.as_posix() or "/images/" in p.as_posix())
    }


@pytest.mark.slow
def test_worker_sees_no_driver_secret(ray_executor: Any) -> None:
    assert os.environ["OPENAI_API_KEY"] == SECRET
    futures = [ray_executor.submit(env_value, "OPENAI_API_KEY") for _ in range(6)]
    assert [f.result() for f in futures] == [""] * 6
    assert all(f.node for f in futures)


@pytest.mark.slow
def test_folder_stages_on_ray_write_the_local_bytes(tmp_path: Path, cluster: LocalRayCluster) -> None:
    local = _levels(tmp_path / "local", 40)
    remote = _levels(tmp_path / "ray", 40)
    runner = CliRunner()
    workspace = tmp_path / "ws"
    for stage in ("stability", "images"):
        done = runner.invoke(app, ["pcg", "stage", stage, "--source", str(local), "--workers", "2"])
        assert done.exit_code == 0, done.output
        args = ["pcg", "stage", stage, "--source", str(remote), "--executor", "ray"]
        done = runner.invoke(
            app, [*args, "--ray-address", cluster.address, "--run-workspace", str(workspace)]
        )
        assert done.exit_code == 0, done.output
    assert len(_outputs(local)) == 40 + 26
    assert _outputs(remote) == _outputs(local)
    # the stability run simulated every level on the cluster; its events say where
    import json

    logs = sorted((workspace / "runs").glob("*/events.jsonl"))
    events = [json.loads(line) for line in logs[0].read_text().splitlines()]
    nodes = {e["payload"]["level"]: e["payload"]["node"] for e in events if e["type"] == "level.node"}
    assert len(nodes) == 40 and all(level.startswith("team/levels/") for level in nodes)
    assert len(set(nodes.values())) == 2


@pytest.mark.slow
def test_suite_on_ray_gives_the_local_digest(
    tmp_path: Path, cluster: LocalRayCluster, ray_executor: Any
) -> None:
    import json

    from worldforge.forge import WorldForge
    from worldforge.suites.science_birds.suite import evaluate
    from worldforge.workspace import start_run

    base = {"programs": ["zero-shot-multi-turn"], "characters": "A-F", "trials": 2, "progress": False}
    models = ["mock:qwen", "mock:phi"]
    local = evaluate(models, forge=WorldForge(), options={**base, "workers": 2})
    ray_opts = {**base, "executor": "ray", "ray_address": cluster.address}
    with start_run(tmp_path / "ws", kind="evaluation", argv=["test"], config=ray_opts) as run:
        remote = evaluate(models, forge=WorldForge(), options=ray_opts, run=run)
        records = run.completed_items()
        events = [json.loads(line) for line in (run.dir / "events.jsonl").read_text().splitlines()]
        run.complete({"result_digest": remote.provenance.result_digest})
    assert remote.provenance.result_digest == local.provenance.result_digest
    assert [r.metrics for r in remote.results] == [r.metrics for r in local.results]
    assert len(records) == 2 * 6 * 2
    # which node ran which item: in the events, never in the records
    nodes = {e["payload"]["item_id"]: e["payload"]["node"] for e in events if e.get("type") == "item.node"}
    assert set(nodes) == set(records) and len(set(nodes.values())) == 2
    assert not any(node in json.dumps(rec) for node in set(nodes.values()) for rec in records.values())
    # the images were classified in the classifier actors (one per node), not on the driver
    classified = _classify_nodes(events)
    assert set(classified) == {iid for iid, rec in records.items() if rec.get("image")}
    assert set(classified.values()) <= set(nodes.values())


def _classify_nodes(events: list[dict[str, Any]]) -> dict[str, str]:
    return {
        e["payload"]["item_id"]: e["payload"]["node"] for e in events if e.get("type") == "item.classify_node"
    }


@pytest.mark.slow
def test_classifier_actors_load_once_and_match_local_vectors(ray_executor: Any) -> None:
    from worldforge.suites.science_birds.classify import classify_batch
    from worldforge.suites.science_birds.config import Classifier

    images = _level_pngs(12)
    local = Classifier(None)
    expected = local.classify(images, True)
    pool = ray_executor.actor_pool(counting_classifier, None)
    try:
        assert pool.size == 2  # one per node
        # batches of different sizes and companions: vectors are batch-independent by design
        batches = [images[:5], images[5:], images[3:9], images[:1]]
        identity = local.identity()
        futures = [pool.submit(classify_batch, identity, [(png, None) for png in b], True) for b in batches]
        results = [f.result() for f in futures]
        loads = [f.result() for f in [pool.submit(classifier_loads) for _ in range(4)]]
        secrets = [f.result() for f in [pool.submit(actor_env_value, "OPENAI_API_KEY") for _ in range(2)]]
    finally:
        pool.shutdown()
    assert results[0] + results[1] == expected
    assert results[2] == expected[3:9] and results[3] == expected[:1]
    assert len({f.node for f in futures}) == 2  # the actors sit on both nodes
    assert loads == [1, 1, 1, 1]  # each actor loaded the classifier once, whatever it served
    assert os.environ["OPENAI_API_KEY"] == SECRET and secrets == ["", ""]  # actors get the blanked env


def test_an_actor_that_cannot_load_fails_at_once_with_one_line(ray_executor: Any) -> None:
    import time

    pool = ray_executor.actor_pool(broken_classifier, None)
    try:
        start = time.monotonic()
        future = pool.submit(classifier_loads)
        with pytest.raises(WorldForgeError, match="could not build its state") as raised:
            future.result(timeout=120)
        elapsed = time.monotonic() - start
    finally:
        pool.shutdown()
    assert "\n" not in str(raised.value) and "nonexistent" in str(raised.value)
    assert pool.replaced == 0 and elapsed < 60  # no new actors tried in turn


def _level_pngs(n: int) -> list[bytes]:
    from worldforge.pcg.levels.glyphs import letter_program
    from worldforge.pcg.sim.pipeline import run_program

    pngs = [run_program(letter_program(chr(65 + i % 26), 7 + i)).png for i in range(n)]
    assert all(pngs)
    return [png for png in pngs if png is not None]


@pytest.mark.slow
def test_killing_a_node_while_classifying_changes_nothing(
    tmp_path: Path, cluster: LocalRayCluster, ray_executor: Any
) -> None:
    import json

    import ray

    from worldforge.forge import WorldForge
    from worldforge.suites.science_birds.suite import evaluate
    from worldforge.workspace import start_run

    base = {"programs": ["zero-shot"], "characters": "A-H", "trials": 2, "progress": False, "chunk_size": 2}
    local = evaluate(["mock:qwen"], forge=WorldForge(), options={**base, "workers": 1})
    ray_opts = {**base, "executor": "ray", "ray_address": cluster.address}
    killed_after: list[dict[str, str]] = []
    worker_node: list[str] = []
    with start_run(tmp_path / "ws", kind="evaluation", argv=["test"], config=ray_opts) as run:
        record_item = run.record_item
        events_path = run.dir / "events.jsonl"

        def record_then_kill(item_id: str, digest: str, record: Any) -> None:
            record_item(item_id, digest, record)
            if len(run.completed_items()) == 4:  # two chunks recorded, the others in flight
                events = [json.loads(line) for line in events_path.read_text().splitlines()]
                killed_after.append(_classify_nodes(events))
                worker_node.extend(  # the worker node (the head is the other)
                    n["NodeID"]
                    for n in ray.nodes()
                    if n["Alive"] and "node:__internal_head__" not in n["Resources"]
                )
                cluster.kill_worker()

        run.record_item = record_then_kill  # type: ignore[method-assign]
        try:
            remote = evaluate(["mock:qwen"], forge=WorldForge(), options=ray_opts, run=run)
        finally:
            cluster.add_worker()
        records = run.completed_items()
        events = [json.loads(line) for line in events_path.read_text().splitlines()]
        run.complete({"result_digest": remote.provenance.result_digest})
    assert killed_after, "the worker node should have been killed mid-run"
    before = killed_after[0]
    assert len(set(before.values())) == 2, "both nodes' actors should have classified before the kill"
    (killed,) = worker_node
    assert killed in before.values()  # the killed node's actor was classifying
    last = list(records)[-2:]  # the last chunk, generated after the kill: on the node that survived
    assert {_classify_nodes(events)[iid] for iid in last} == set(before.values()) - {killed}
    assert len(records) == 16
    assert remote.provenance.result_digest == local.provenance.result_digest


@pytest.mark.slow
def test_killing_a_worker_node_mid_run_changes_nothing(
    tmp_path: Path, cluster: LocalRayCluster, ray_executor: Any
) -> None:
    from worldforge.pcg.competition import stages as folder

    src = _levels(tmp_path / "killed", 160)
    expected_src = _levels(tmp_path / "expected", 160)
    folder.stage_physics(expected_src, workers=2)

    class KillAfter:
        """Progress that kills the worker node once some levels are done and others in flight."""

        def __init__(self) -> None:
            self.done = 0
            self.nodes_before: set[str] = set()

        def start(self, description: str, total: int) -> None:
            return None

        def __call__(self, advance: int = 1) -> None:
            self.done += advance
            if self.done == 40:
                self.nodes_before = set(ray_executor.nodes)
                cluster.kill_worker()

    progress = KillAfter()
    try:
        folder.stage_physics(src, executor=ray_executor, progress=progress)
    finally:
        cluster.add_worker()  # later tests on this cluster get their second node back
    assert progress.done == 160
    assert len(progress.nodes_before) == 2, "both nodes should have run levels before the kill"
    assert _outputs(src) == _outputs(expected_src)
