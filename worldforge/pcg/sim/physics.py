"""Box2D stability test set up like the Science Birds Evaluator (Unity 2019.4 Physics2D = Box2D 2.x).

Unity's 2D physics *is* Box2D 2.x, so we rebuild the evaluator's world in pybox2d (module ``Box2D``
from ``ufal-pybox2d``) with the project's settings instead of approximating it with another engine:


* gravity (0, -9.81) with per-body gravity scale 0.5, fixed step 0.02 s, 100 velocity and 100
  position iterations; the remaining Physics2D settings (contact offset 0.01 = Box2D's polygon
  radius, sleep time 0.5 s, sleep tolerances 0.01 / 2 deg, Baumgarte 0.2, TOI 0.75, max correction
  0.2) are Box2D's compiled-in defaults, so they hold without being set;
* raw collider sizes from the prefabs (0.22x0.21, 0.70x0.22), density 1, wood friction 4 (Box2D
  mixes frictions as the geometric mean), linear drag 1, angular drag 0.05;
* three ``Landscape`` ground copies whose top lies at y = -3.5, default material friction 0.4;
* block damage: each new contact deals its relative speed, a block dies at 5 (velocity zeroed,
  collider removed, object gone 0.5 s later, keeping its last position); objects wholly beyond
  |x| > 26.25 die too.

Measurement follows the evaluator: start positions at load (no settling), 10 s of game time, a block
is *moving* when its net displacement is >= 0.1, ``stability = (total - moving) / total``, best of
``trials`` runs (stopping at 1.0). Speed comes from sleeping: once every body sleeps nothing can
change any more, so the remaining steps are skipped (bit-identical to running them).

Known limits (see docs/performance.md and the reference note's ambiguities): Unity's frame/step
interplay and its run-to-run jitter are not modelled; run ``k`` of ``trials`` simulates ``k`` extra
fixed steps to stand in for frame-timing differences. TNT does not explode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from typing import Any, NotRequired, TypedDict

from worldforge import heavy
from worldforge.core.errors import WorldForgeError
from worldforge.pcg.levels.level import Level, LevelObject, parse_level_xml

#: Behaviour version, recorded in every item record and cache key. An opaque id: bump it (any new
#: string) whenever this code's output can change; reference-output tests pin the behaviour. The
#: value is the id the code had when versions were derived from source files, so digests of runs
#: made before the package layout changed still compare equal.
STAGE_VERSION = "worldforge.pcg.physics:d410a733c63a4072"

GRAVITY = -9.81
GRAVITY_SCALE = 0.5
FIXED_DT = 0.02
VELOCITY_ITERATIONS = 100
POSITION_ITERATIONS = 100
LINEAR_DAMPING = 1.0
ANGULAR_DAMPING = 0.05
DENSITY = 1.0
FRICTION = {"wood": 4.0, "stone": 4.0, "ice": 0.74}
GROUND_FRICTION = 0.4
GROUND_XS = (-13.125, 4.365, 21.855)
GROUND_CENTER_Y = -4.3 - 1.4034476
GROUND_HALF = (17.49 / 2, 4.4068956 / 2)
BLOCK_LIFE = 5.0
LIFE_MULTIPLIER = {"wood": 1.0, "stone": 2.0, "ice": 0.5}
DEATH_DELAY_STEPS = 25  # 0.5 s particle lifetime before the GameObject is destroyed
OUT_OF_BOUNDS_X = 26.25
MOVEMENT_THRESHOLD = 0.1
DURATION = 10.0
_AWAKE_CHECK_EVERY = 5


@dataclass(frozen=True)
class Pose:
    """A body's pose: center position and angle in degrees (Unity's z rotation)."""

    x: float
    y: float
    angle: float

    def to_list(self) -> list[float]:
        return [self.x, self.y, self.angle]


@dataclass(frozen=True)
class RunResult:
    """One simulated run."""

    total: int
    moving: int
    destroyed: int
    score: float
    steps: int
    settled_step: int | None  # first step after which every body slept (None: never)
    displacements: tuple[float, ...]
    final_poses: tuple[Pose, ...]
    alive: tuple[bool, ...]


class BlockSummary(TypedDict):
    """One body of a simulated level: its start and final pose, how far it moved and its fate."""

    type: str
    kind: str
    start: list[float]
    final: list[float]
    displacement: float
    moving: bool
    destroyed: bool


class StabilitySummary(TypedDict):
    """:meth:`StabilityResult.to_dict`: the stability figures and, per body, what happened to it."""

    total_blocks: int
    moving_blocks: int
    destroyed_blocks: int
    stability: float
    trials: int
    runs: list[float]
    steps: int
    settled_step: int | None
    max_displacement: float
    #: Per-body details (a caller that does not show them drops them).
    blocks: NotRequired[list[BlockSummary]]


@dataclass(frozen=True)
class StabilityResult:
    """Stability of one level: the best run's score and the last run's details (as the evaluator)."""

    total_blocks: int
    moving_blocks: int
    destroyed_blocks: int
    stability: float
    trials: int
    runs: tuple[float, ...]
    displacements: tuple[float, ...]
    final_poses: tuple[Pose, ...]
    start_poses: tuple[Pose, ...]
    alive: tuple[bool, ...]
    objects: tuple[LevelObject, ...] = field(repr=False)
    steps: int = 0
    settled_step: int | None = None

    @property
    def stable(self) -> bool:
        return self.moving_blocks == 0

    def to_dict(self) -> StabilitySummary:
        """JSON-native summary (deterministic: no timings)."""
        return {
            "total_blocks": self.total_blocks,
            "moving_blocks": self.moving_blocks,
            "destroyed_blocks": self.destroyed_blocks,
            "stability": self.stability,
            "trials": self.trials,
            "runs": list(self.runs),
            "steps": self.steps,
            "settled_step": self.settled_step,
            "max_displacement": max(self.displacements) if self.displacements else 0.0,
            "blocks": [
                {
                    "type": o.type,
                    "kind": o.kind,
                    "start": s.to_list(),
                    "final": f.to_list(),
                    "displacement": d,
                    "moving": d >= MOVEMENT_THRESHOLD,
                    "destroyed": not a,
                }
                for o, s, f, d, a in zip(
                    self.objects,
                    self.start_poses,
                    self.final_poses,
                    self.displacements,
                    self.alive,
                    strict=True,
                )
            ],
        }


def _as_level(level: Level | str | bytes) -> Level:
    if isinstance(level, Level):
        return level
    return parse_level_xml(level)


def _half_extent_x(obj: LevelObject, angle_rad: float) -> float:
    w, h = obj.size
    if obj.is_circle:
        return w / 2
    return (abs(math.cos(angle_rad)) * w + abs(math.sin(angle_rad)) * h) / 2


@cache
def _callback_classes() -> tuple[type, type]:
    """The contact listener and bounds query classes (built once: Box2D is imported lazily)."""
    Box2D = heavy.box2d()  # noqa: N806 - the library's module name
    listener: Any = Box2D.b2ContactListener
    query: Any = Box2D.b2QueryCallback

    class _Damage(listener):
        """Collects (body index, relative speed) for contacts that just began touching."""

        def __init__(self) -> None:
            super().__init__()
            self.hits: list[tuple[int, float]] = []

        def BeginContact(self, contact: Any) -> None:  # noqa: N802 - Box2D callback name
            a = contact.fixtureA.body
            b = contact.fixtureB.body
            va = a.linearVelocity
            vb = b.linearVelocity
            speed = math.hypot(va[0] - vb[0], va[1] - vb[1])
            if speed <= 0.0:
                return
            ia = a.userData
            ib = b.userData
            if ia is not None:
                self.hits.append((ia, speed))
            if ib is not None:
                self.hits.append((ib, speed))

        # Plain Python no-ops: without them pybox2d routes every per-contact, per-step callback
        # through its SWIG base wrappers, which costs about a third of the step time.
        def EndContact(self, contact: Any) -> None:  # noqa: N802
            return None

        def PreSolve(self, contact: Any, old_manifold: Any) -> None:  # noqa: N802
            return None

        def PostSolve(self, contact: Any, impulse: Any) -> None:  # noqa: N802
            return None

    class _Beyond(query):
        """Collects the body indices of fixtures whose (fattened) bounds reach past the edge."""

        def __init__(self) -> None:
            super().__init__()
            self.found: list[int] = []
            far = 1.0e9
            self.sides = (
                Box2D.b2AABB(lowerBound=(-far, -far), upperBound=(-OUT_OF_BOUNDS_X, far)),
                Box2D.b2AABB(lowerBound=(OUT_OF_BOUNDS_X, -far), upperBound=(far, far)),
            )

        def ReportFixture(self, fixture: Any) -> bool:  # noqa: N802 - Box2D callback name
            index = fixture.body.userData
            if index is not None:
                self.found.append(index)
            return True

    return _Damage, _Beyond


def _build_world(level: Level) -> tuple[Any, list[Any], list[LevelObject], Any]:
    Box2D = heavy.box2d()  # noqa: N806 - the library's module name
    damage, _ = _callback_classes()
    listener = damage()
    world = Box2D.b2World(gravity=(0.0, GRAVITY), doSleep=True, contactListener=listener)
    for gx in GROUND_XS:
        ground = world.CreateStaticBody(position=(gx, GROUND_CENTER_Y))
        ground.CreatePolygonFixture(box=GROUND_HALF, friction=GROUND_FRICTION, restitution=0.0)
    bodies: list[Any] = []
    objects: list[LevelObject] = []
    # One body definition and one fixture definition per shape, reused: Box2D copies both into
    # the new body and fixture, and pybox2d's keyword forms build (and fill attribute by
    # attribute) fresh ones for every block, a third of the cost of setting up a level.
    body_def = Box2D.b2BodyDef(
        type=Box2D.b2_dynamicBody,
        linearDamping=LINEAR_DAMPING,
        angularDamping=ANGULAR_DAMPING,
        gravityScale=GRAVITY_SCALE,
    )
    fixture_defs: dict[tuple[bool, float, float, float], Any] = {}
    for obj in level.objects:
        angle = math.radians(obj.rotation)
        w, h = obj.size
        friction = FRICTION.get(obj.material, GROUND_FRICTION)
        if obj.kind == "platform":
            plat = world.CreateStaticBody(position=(obj.x, obj.y), angle=angle)
            plat.CreatePolygonFixture(box=(w / 2, h / 2), friction=GROUND_FRICTION)
            continue
        body_def.position = (obj.x, obj.y)
        body_def.angle = angle
        body_def.userData = len(bodies)
        body = world.CreateBody(body_def)
        key = (obj.is_circle, w, h, friction)
        fixture_def = fixture_defs.get(key)
        if fixture_def is None:
            shape = (
                Box2D.b2CircleShape(radius=w / 2)
                if obj.is_circle
                else Box2D.b2PolygonShape(box=(w / 2, h / 2))
            )
            fixture_def = Box2D.b2FixtureDef(shape=shape, density=DENSITY, friction=friction, restitution=0.0)
            fixture_defs[key] = fixture_def
        body.CreateFixture(fixture_def)
        bodies.append(body)
        objects.append(obj)
    return world, bodies, objects, listener


def _beyond_edges(world: Any, query: Any) -> list[int]:
    """Indices of the bodies that may lie past ``|x| > OUT_OF_BOUNDS_X`` (a superset, in order):
    one broad-phase query per side instead of reading every body's position from Python. A body
    whose centre is past the edge has a fixture whose bounds reach past it, so none is missed."""
    query.found = []
    for side in query.sides:
        world.QueryAABB(query, side)
    return sorted(set(query.found))


def _run(level: Level, n_steps: int) -> tuple[RunResult, tuple[Pose, ...], tuple[LevelObject, ...]]:
    world, bodies, objects, listener = _build_world(level)
    beyond = _callback_classes()[1]()
    n = len(bodies)
    start = tuple(Pose(float(o.x), float(o.y), float(o.rotation)) for o in objects)
    damage = [0.0] * n
    life = [BLOCK_LIFE * LIFE_MULTIPLIER.get(o.material, 1.0) for o in objects]
    dying: dict[int, int] = {}  # body index -> step at which it is destroyed
    gone: dict[int, tuple[float, float, float]] = {}
    dead = [False] * n
    settled: int | None = None
    step = 0
    world_step = world.Step
    for step in range(1, n_steps + 1):
        world_step(FIXED_DT, VELOCITY_ITERATIONS, POSITION_ITERATIONS)
        if listener.hits:
            hits = listener.hits
            listener.hits = []
            for idx, speed in hits:
                if dead[idx]:
                    continue
                damage[idx] += speed
                if damage[idx] >= life[idx]:
                    _kill(bodies[idx], idx, step, dead, dying)
        if dying:
            for idx in [i for i, s in dying.items() if s <= step]:
                body = bodies[idx]
                gone[idx] = (body.position[0], body.position[1], math.degrees(body.angle))
                body.active = False
                del dying[idx]
        if step % _AWAKE_CHECK_EVERY == 0:
            # Killing a body past the edge changes no other body's pose or sleep state, so only
            # the bodies the broad phase finds there need their positions read, in index order.
            for i in _beyond_edges(world, beyond):
                body = bodies[i]
                if dead[i] or not body.awake:
                    continue
                x = abs(body.position[0])
                # cheap pre-check: no prefab is wider than 2.1 units
                if x > OUT_OF_BOUNDS_X and x - _half_extent_x(objects[i], body.angle) > OUT_OF_BOUNDS_X:
                    _kill(body, i, step, dead, dying)
            awake = False
            for i, body in enumerate(bodies):
                if not dead[i] and body.awake:
                    awake = True
                    break
            if not awake and not dying:
                settled = step
                break
    final: list[Pose] = []
    for i, body in enumerate(bodies):
        if i in gone:
            final.append(Pose(*gone[i]))
        else:
            p = body.position
            final.append(Pose(float(p[0]), float(p[1]), math.degrees(body.angle)))
    displacements = tuple(math.hypot(f.x - s.x, f.y - s.y) for f, s in zip(final, start, strict=True))
    moving = sum(1 for d in displacements if d >= MOVEMENT_THRESHOLD)
    result = RunResult(
        total=n,
        moving=moving,
        destroyed=sum(dead),
        score=(n - moving) / n,
        steps=n_steps if settled is None else step,
        settled_step=settled,
        displacements=displacements,
        final_poses=tuple(final),
        alive=tuple(not d for d in dead),
    )
    return result, start, tuple(objects)


def _kill(body: Any, idx: int, step: int, dead: list[bool], dying: dict[int, int]) -> None:
    """Block death: zero velocity, collider gone, destroyed after the particle lifetime."""
    if dead[idx]:
        return
    dead[idx] = True
    body.linearVelocity = (0.0, 0.0)
    body.angularVelocity = 0.0
    for fixture in list(body.fixtures):
        body.DestroyFixture(fixture)
    dying[idx] = step + DEATH_DELAY_STEPS


def simulate(level: Level | str | bytes, *, trials: int = 1, duration: float = DURATION) -> StabilityResult:
    """Run the stability test; see the module docstring for the exact setup.

    ``trials`` runs are made (stopping early once a run scores 1.0); ``stability`` is the best
    score and the counts, displacements and poses come from the last run, as in the evaluator.
    """
    lvl = _as_level(level)
    if trials < 1:
        raise WorldForgeError(f"trials must be >= 1, got {trials}.")
    if not math.isfinite(duration) or duration <= 0:
        raise WorldForgeError(f"duration must be a positive number of seconds, got {duration}.")
    if not lvl.dynamic_objects:
        where = lvl.source or "level"
        raise WorldForgeError(f"{where}: the level has no blocks, pigs or TNT; stability is undefined.")
    base_steps = int(round(duration / FIXED_DT))
    scores: list[float] = []
    last: RunResult | None = None
    start: tuple[Pose, ...] = ()
    objects: tuple[LevelObject, ...] = ()
    for k in range(trials):
        last, start, objects = _run(lvl, base_steps + k)
        scores.append(last.score)
        if last.score >= 1.0:
            break
    assert last is not None
    return StabilityResult(
        total_blocks=last.total,
        moving_blocks=last.moving,
        destroyed_blocks=last.destroyed,
        stability=max(scores),
        trials=len(scores),
        runs=tuple(scores),
        displacements=last.displacements,
        final_poses=last.final_poses,
        start_poses=start,
        alive=last.alive,
        objects=objects,
        steps=last.steps,
        settled_step=last.settled_step,
    )


__all__ = [
    "MOVEMENT_THRESHOLD",
    "BlockSummary",
    "Pose",
    "RunResult",
    "StabilityResult",
    "StabilitySummary",
    "simulate",
]
