"""The world service: the simulated robot SDK that stands in for real robots.

Holds a ``hardware.World``, runs it on simulated time (wall time × ``time_factor``),
and serves it over ZeroMQ (``hardware.sim_protocol``) on a ROUTER whose address is the
``zmq`` field of its retained factsheet. On the broker it publishes:

==================== ================= === ====== ====================================
topic                kind              QoS retain body
==================== ================= === ====== ====================================
``<id>/state``       ``world.state``   1   yes    t, objects, robots, violations (count)
``<id>/events``      ``world.violation`` 1 no     t, kind, object, robots, command_id,
                                                  node, seq
==================== ================= === ====== ====================================

and handles ``_/world`` ``world.move_object`` {object, position, yaw?} (answered with
``world.move_object.reply`` {ok, reason} when sent as a request). With an ``[access]``
table in the config, only its operators may move objects; others are refused
(``not_operator``) with a warning naming the sender.

A world of a mission (``--mission-id``) that starts while its own retained
``world.state`` of that mission is on the broker (it was killed or stopped and
restarted) restores its objects from it before it serves (``World.restore``: poses,
placed state; a held object put down where the state showed it), and logs
``world.restored`` with the count and the mission. Reading it waits at most
``RESTORE_WAIT_S`` (1.5 s) at start-up; a malformed or foreign state (another sender,
another mission, unstamped) is ignored with a ``world.state_ignored`` warning naming
why. See ``teamtree.agents.world.restart``.

Config (``[[agents]]`` with ``kind = "world"``)::

    time_factor = 10.0            # simulated seconds per wall second
    zmq_host = "127.0.0.1"        # bind address; zmq_port = 0 picks a free port
    zmq_advertise = "127.0.0.1"   # host put in the factsheet (default zmq_host)
    [agents.objects.cup]  shape = "cylinder"  dims = [0.04, 0.10]
                          position = [x, y, z]  goal = [x, y, z]  yaw = 0.0
    [agents.robots.pr2]   profile = "pr2"  base = [x, y, z]  yaw = 0.0
    [agents.hands.alice]  rest = [x, y, z]  speed = 0.3  noise = 0.005
                          path_noise = 0.1  lift = 0.15  grasp_time = 0.5
                          release_time = 0.3      # a human's hand (seed 000 §2.3)
    seed = 0                      # hand path and tracking noise
    hand_sample_s = 0.05          # simulated s between tracked hand samples
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from typing import Any, ClassVar

import zmq
import zmq.asyncio

from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.config import AgentSpec, TeamConfig, spec_reader
from teamtree.agents.runtime.mission import stamp
from teamtree.agents.runtime.params import decode_params, params_dict
from teamtree.agents.world.params import WorldParams
from teamtree.agents.world.restart import RESTORE_WAIT_S, read_retained, state_to_restore
from teamtree.agents.world.wire import (
    WorldWireError,
    decode_move_object,
)
from teamtree.broker import SpecificationError, TeamtreeError, TopicError, WireError
from teamtree.broker.envelope import Envelope, encode
from teamtree.broker.hlc import wall_ms
from teamtree.broker.topics import Topic, validate_id
from teamtree.hardware import sim_protocol as proto
from teamtree.hardware.profiles import PROFILES
from teamtree.hardware.sim_wire import InfoRequest, MoveObjectRequest, ObserveRequest, StateRequest
from teamtree.hardware.world import GOAL_TOLERANCE, HAND_SAMPLE_S, World

WORLD_CHANNEL = "world"
MISSION_CHANNEL = "mission"
STATE_CHANNEL = "state"
EVENTS_CHANNEL = "events"
_SHAPES = {"box": 3, "cylinder": 2, "sphere": 1}
_HAND_KEYS = ("speed", "noise", "path_noise", "lift", "grasp_time", "release_time")
_LOOP_S = 0.02
_READS = (InfoRequest, ObserveRequest, StateRequest)


class WorldAgent(Agent):
    """Serve the simulated world over ZeroMQ; publish its state (module docstring)."""

    kind = "world"
    overridable: ClassVar[frozenset[str]] = frozenset({"time_factor"})

    def __init__(
        self,
        *args: Any,
        objects: dict[str, dict[str, Any]],
        robots: dict[str, dict[str, Any]],
        time_factor: float = 1.0,
        zmq_host: str = "127.0.0.1",
        zmq_port: int = 0,
        zmq_advertise: str | None = None,
        state_period_s: float = 0.2,
        goal_tolerance: float = GOAL_TOLERANCE,
        hands: dict[str, dict[str, Any]] | None = None,
        seed: int = 0,
        hand_sample_s: float = HAND_SAMPLE_S,
        operators: list[str] | None = None,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        #: who may disturb the world (``[access] operators``); None: no [access] table
        self.operators = None if operators is None else frozenset(operators)
        #: for the short-lived connection that reads the retained state back (restart.py)
        self._login = {k: kwargs.get(k) for k in ("username", "password", "tls_context")}
        self.restore_wait_s = RESTORE_WAIT_S
        self.world = World.from_spec(
            objects,
            robots,
            hands,
            goal_tolerance=goal_tolerance,
            seed=seed,
            hand_sample_s=hand_sample_s,
        )
        self.time_factor = float(time_factor)
        self.zmq_host = zmq_host
        self.zmq_port = zmq_port
        self.zmq_advertise = zmq_advertise or zmq_host
        self.state_period_s = state_period_s
        self.zmq_address: str | None = None
        self._context: zmq.asyncio.Context | None = None
        self._socket: zmq.asyncio.Socket | None = None
        self._server: asyncio.Task[None] | None = None
        self._t0 = time.monotonic()
        self._published_violations = 0
        #: where each object starts: a new mission of a serving team starts from it
        self._initial = {n: (list(o["position"]), o.get("yaw")) for n, o in objects.items()}
        self._missions_seen: set[str] = set()
        self._started_ms = 0

    # -- config --------------------------------------------------------------------

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate time_factor, objects, robots and the ZeroMQ keys. Raises
        ConfigError naming the key."""
        params = decode_params(spec, config, WorldParams)
        reader = spec_reader(spec, config)
        if not params.objects:
            raise reader.error("objects", "is missing or empty; add [agents.objects.<name>]")
        if not params.robots:
            raise reader.error("robots", "is missing or empty; add [agents.robots.<name>]")
        objects = {name: _object(reader, name, o) for name, o in params.objects.items()}
        robots = {name: _robot(reader, name, r) for name, r in params.robots.items()}
        hands = {name: _hand(reader, name, h) for name, h in params.hands.items()}
        try:
            World.from_spec(objects, robots, hands)
        except SpecificationError as exc:
            raise reader.error("hands" if "hand" in str(exc) else "objects", str(exc)) from None
        operators = list(config.access.operators) if config.access.declared else None
        return {
            **params_dict(params),
            "objects": objects,
            "robots": robots,
            "hands": hands,
            "operators": operators,
        }

    def factsheet(self) -> dict[str, Any]:
        return {
            **super().factsheet(),
            "zmq": self.zmq_address,
            "protocol": proto.PROTOCOL_VERSION,
            "time_factor": self.time_factor,
            "robots": {name: body.spec.name for name, body in self.world.robots.items()},
            "objects": sorted(self.world.objects),
            "hands": sorted(self.world.hands),
        }

    # -- time ----------------------------------------------------------------------

    def now(self) -> float:
        """Simulated seconds since the world started."""
        return (time.monotonic() - self._t0) * self.time_factor

    # -- lifecycle -------------------------------------------------------------------

    async def setup(self) -> None:
        self._context = zmq.asyncio.Context()
        sock = self._context.socket(zmq.ROUTER)
        sock.setsockopt(zmq.LINGER, 0)
        if self.zmq_port:
            sock.bind(f"tcp://{self.zmq_host}:{self.zmq_port}")
            port = self.zmq_port
        else:
            port = sock.bind_to_random_port(f"tcp://{self.zmq_host}")
        self._socket = sock
        self.zmq_address = f"tcp://{self.zmq_advertise}:{port}"
        await self._restore()  # before anything is served or published
        self._t0 = time.monotonic()
        self.on_team(WORLD_CHANNEL, self._on_move_object, kind="world.move_object")
        self._started_ms = wall_ms()
        self.on_team(MISSION_CHANNEL, self._on_new_mission, kind="mission.tree")
        self._server = self.spawn(self._serve(), "zmq")
        self.spawn(self._state_loop(), "state")
        self.log.info("world.serving", zmq=self.zmq_address, time_factor=self.time_factor)

    def _restore_probe(self) -> tuple[str, bytes]:
        """The probe the restore's reader publishes once subscribed (restart.py)."""
        topic = self.topic("restore_probe")
        envelope = self.envelope("world.restore_probe", stamp({}, self.mission_id), topic)
        return topic, encode(envelope)

    async def _restore(self) -> None:
        """Restore the objects from this world's retained ``world.state`` of its own
        mission, if the broker keeps one (module docstring); waits at most
        ``restore_wait_s``. Never raises: a state it cannot use is ignored with a
        warning naming why."""
        if self.mission_id is None:
            return  # unscoped: a restart cannot be told from a new mission
        topic = self.topic(STATE_CHANNEL)
        try:
            message = await read_retained(
                self.endpoint,
                topic,
                client_id=f"teamtree-{self.team}-{self.id}-restore",
                wait_s=self.restore_wait_s,
                probe=self._restore_probe(),
                **self._login,
            )
        except Exception as exc:  # the broker is the connection's business; start anyway
            self.log.warning("world.state_ignored", why=f"cannot read it: {exc!r}")
            return
        if message is None:
            return  # nothing kept: a new mission, or a first start
        try:
            state = state_to_restore(message, self.id, self.mission_id)
            restored = self.world.restore(state)
        except (ValueError, SpecificationError) as exc:
            self.log.warning("world.state_ignored", topic=topic, why=str(exc))
            return
        held = sorted(
            name
            for name, view in state["objects"].items()
            if isinstance(view, dict) and view.get("held_by") is not None
        )
        placed = sorted(n for n in restored if self.world.objects[n].placements)
        self.log.info(
            "world.restored",
            objects=len(restored),
            mission=self.mission_id,
            at_goal=placed,
            put_down=held,
        )

    async def _state_loop(self) -> None:
        """Advance the world; publish violations, and the state on change (≤ 1 / period)."""
        last_version, last_publish = -1, -1e9
        while True:
            self.world.advance(self.now())
            await self._publish_violations()
            wall = time.monotonic()
            changed = self.world.version != last_version or self.world.moving
            if changed and wall - last_publish >= self.state_period_s:
                last_version, last_publish = self.world.version, wall
                with contextlib.suppress(TeamtreeError):
                    state = self.world.state(self.now(), shared=True)  # encoded at once
                    await self.publish(STATE_CHANNEL, "world.state", state, retain=True)
            await asyncio.sleep(_LOOP_S)

    async def on_stop(self) -> None:
        # the last state, so a recorder still listening sees how the world ended
        self.world.advance(self.now())
        with contextlib.suppress(TeamtreeError):
            await self.publish(
                STATE_CHANNEL, "world.state", self.world.state(self.now(), shared=True), retain=True
            )
        if self._server is not None:
            self._server.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._server
        if self._socket is not None:
            self._socket.close(linger=0)
            self._socket = None
        if self._context is not None:
            self._context.destroy(linger=0)
            self._context = None

    # -- serving ---------------------------------------------------------------------

    async def _serve(self) -> None:
        assert self._socket is not None
        sock = self._socket
        while True:
            frames = await sock.recv_multipart()
            if len(frames) < 2:
                self.stats["zmq_malformed"] += 1
                continue
            try:
                request = proto.decode_request(frames[-1])
            except WireError as exc:
                self.stats["zmq_malformed"] += 1
                reply = proto.bad_request(exc)
            else:
                try:
                    reply = proto.serve(
                        self.world,
                        request,
                        self.now(),
                        now_ms=wall_ms(),
                        time_factor=self.time_factor,
                    )
                except Exception as exc:  # a bug in the world must not stop the server
                    self.log.error("world.request_failed", error=repr(exc), exc_info=True)
                    reply = {"rid": request.rid, "ok": False, "reason": "internal_error"}
                if not isinstance(request, _READS):
                    self.log.debug("world.request", request=request, reply=reply)
            self.stats["zmq_requests"] += 1
            await sock.send_multipart([*frames[:-1], proto.encode(reply)])

    async def _publish_violations(self) -> None:
        while self._published_violations < len(self.world.violations):
            violation = self.world.violations[self._published_violations]
            self._published_violations += 1
            self.log.warning("world.violation", **violation)
            with contextlib.suppress(TeamtreeError):
                await self.publish(EVENTS_CHANNEL, "world.violation", violation)

    async def _on_move_object(self, env: Envelope, topic: Topic) -> None:
        if self.operators is not None and env.sender not in self.operators:
            # a disturbance needs an operator; with access control on, the broker lets
            # only operators' logins write the world's team channel at all
            why = f"{env.sender!r} is not an operator (operators: {sorted(self.operators)})"
            self.log.warning("world.disturbance_refused", by=env.sender, why=why)
            if env.reply_to is not None:
                answer = {"ok": False, "reason": "not_operator", "detail": why}
                await self.reply(env, "world.move_object.reply", answer)
            return
        try:
            move = decode_move_object(env.body)
        except WorldWireError as exc:
            self._drop("malformed", str(topic), env.sender, str(exc))
            if env.reply_to is not None:
                answer = {"ok": False, "reason": "bad_params", "detail": str(exc)}
                await self.reply(env, "world.move_object.reply", answer)
            return
        request = MoveObjectRequest(rid=0, object=move.object, position=move.position, yaw=move.yaw)
        reply = proto.serve(self.world, request, self.now())
        reply.pop("rid", None)
        message: dict[str, Any] = {"object": move.object, "position": list(move.position)}
        if move.yaw is not None:
            message["yaw"] = move.yaw
        self.log.info("world.move_object", by=env.sender, **message, ok=reply["ok"])
        if env.reply_to is not None:
            await self.reply(env, "world.move_object.reply", reply)

    async def _on_new_mission(self, env: Envelope, topic: Topic) -> None:
        """A serving world (no mission of its own, so it outlives missions) puts the
        objects a new mission's tree names back where they started, so the mission
        starts from its own initial state and is not found done by what the last
        one left. Only live trees of missions it has not seen count (a retained one
        is older than this world); an object a robot holds stays where it is."""
        body = env.body if isinstance(env.body, dict) else {}
        mission = body.get("mission")
        if self.mission_id is not None or not isinstance(mission, str):
            return
        if mission in self._missions_seen or env.ts < self._started_ms:
            self._missions_seen.add(mission)
            return
        self._missions_seen.add(mission)
        put_back = []
        for name in sorted(_tree_objects(body.get("tree"))):
            start = self._initial.get(name)
            obj = self.world.objects.get(name)
            if start is None or obj is None or list(obj.position) == start[0]:
                continue
            reply = self.world.move_object(name, start[0], self.now(), start[1])
            if reply.get("ok"):
                put_back.append(name)
        if put_back:
            self.log.info("world.mission_reset", mission=mission, objects=put_back)


def _tree_objects(tree: Any) -> set[str]:
    """The objects the leaves of a ``mission.tree`` body's tree name (best effort)."""
    names: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        params = node.get("params")
        if isinstance(params, dict) and isinstance(params.get("object"), str):
            names.add(params["object"])
        children = node.get("children")
        if isinstance(children, list):
            stack.extend(children)
    return names


def _numbers(reader: Any, key: str, value: Any, n: int | None, what: str) -> list[float]:
    if (
        not isinstance(value, list)
        or (n is not None and len(value) != n)
        or not value
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        raise reader.error(key, f"is {value!r}; expected {what}")
    return [float(v) for v in value]


def _entry(reader: Any, section: str, name: str, raw: Any, keys: Sequence[str]) -> str:
    """Check one ``[agents.<section>.<name>]`` table: a valid name, a table, only
    `keys`. Returns the key path for error messages. Raises ConfigError."""
    where = f"{section}.{name}"
    try:
        validate_id(name, f"{section.rstrip('s')} name")
    except TopicError as exc:
        raise reader.error(where, exc.reason) from None
    expected = ", ".join(keys)
    if not isinstance(raw, dict):
        raise reader.error(where, f"must be a table with {expected}")
    unknown = sorted(set(raw) - set(keys))
    if unknown:
        raise reader.error(f"{where}.{unknown[0]}", f"unknown key; expected {expected}")
    return where


def _object(reader: Any, name: str, raw: Any) -> dict[str, Any]:
    where = _entry(reader, "objects", name, raw, ("shape", "dims", "position", "goal", "yaw"))
    shape = raw.get("shape")
    if shape not in _SHAPES:
        raise reader.error(f"{where}.shape", f"is {shape!r}; expected box, cylinder or sphere")
    n = _SHAPES[shape]
    dims = _numbers(reader, f"{where}.dims", raw.get("dims"), n, f"{n} positive number(s)")
    if any(d <= 0 for d in dims):
        raise reader.error(f"{where}.dims", f"is {dims}; dimensions must be > 0")
    out: dict[str, Any] = {
        "shape": shape,
        "dims": dims,
        "position": _numbers(reader, f"{where}.position", raw.get("position"), 3, "[x, y, z]"),
        "goal": None,
        "yaw": 0.0,
    }
    if raw.get("goal") is not None:
        out["goal"] = _numbers(reader, f"{where}.goal", raw["goal"], 3, "[x, y, z]")
    if "yaw" in raw:
        out["yaw"] = _numbers(reader, f"{where}.yaw", [raw["yaw"]], 1, "radians")[0]
    return out


def _robot(reader: Any, name: str, raw: Any) -> dict[str, Any]:
    where = _entry(reader, "robots", name, raw, ("profile", "base", "yaw"))
    name_of_profile = raw.get("profile", name)
    if name_of_profile not in PROFILES:
        known = ", ".join(sorted(PROFILES))
        raise reader.error(f"{where}.profile", f"is {name_of_profile!r}; expected one of {known}")
    out = {
        "profile": name_of_profile,
        "base": _numbers(reader, f"{where}.base", raw.get("base"), 3, "[x, y, z]"),
        "yaw": 0.0,
    }
    if "yaw" in raw:
        out["yaw"] = _numbers(reader, f"{where}.yaw", [raw["yaw"]], 1, "radians")[0]
    return out


def _hand(reader: Any, name: str, raw: Any) -> dict[str, Any]:
    where = _entry(reader, "hands", name, raw, ("rest", *_HAND_KEYS))
    out: dict[str, Any] = {
        "rest": _numbers(reader, f"{where}.rest", raw.get("rest"), 3, "[x, y, z]")
    }
    for key in _HAND_KEYS:
        if key in raw:
            value = _numbers(reader, f"{where}.{key}", [raw[key]], 1, "a number")[0]
            if value < 0 or (key == "speed" and value == 0):
                raise reader.error(f"{where}.{key}", f"is {value}; expected a positive number")
            out[key] = value
    return out
