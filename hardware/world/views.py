"""What the world shows: poses, object/robot/hand views, a driver's and a person's
observation, the whole state and the static description.

Human hands are sampled every ``hand_sample_s`` simulated seconds with Gaussian
tracking noise (``noise``, metres) — what a camera tracking the hand would report —
and observations carry the recent track.
"""

from __future__ import annotations

from typing import Any

from teamtree.hardware.profiles import Vec3
from teamtree.hardware.world.commands import reply
from teamtree.hardware.world.objects import WorldObject
from teamtree.hardware.world.state import WorldState
from teamtree.hardware.world.vectors import rounded


class Views(WorldState):
    """Read-only views of the world (they advance time first where they take `t`)."""

    def robot_pose(self, robot: str) -> tuple[Vec3, Vec3]:
        """(base, gripper) of `robot` now, interpolated along its current motion."""
        return self.robots[robot].pose(self.t)

    def object_position(self, name: str) -> Vec3:
        """Where object `name` is now (in the gripper while held)."""
        obj = self.objects[name]
        if obj.held_by in self.hands:
            return self.hands[obj.held_by].pose(self.t)
        if obj.held_by is not None:
            return self.robot_pose(obj.held_by)[1]
        return obj.position

    def object_view(self, name: str, *, shared: bool = False) -> dict[str, Any]:
        """Object `name` as observations show it (a fresh dict the caller may keep).

        Every driver observes every object many times a second and most stand still,
        so the view of an object nobody holds is made once per pose and copied.
        ``shared``: return that view itself, for a caller that only encodes it."""
        obj = self.objects[name]
        if obj.held_by is not None:  # it moves with its holder
            return self._object_view(name, obj)
        fields = (obj.shape, obj.dims, obj.position, obj.yaw, obj.goal, self.goal_tolerance)
        cached = self._views.get(name)
        if cached is None or cached[0] != fields:
            cached = (fields, self._object_view(name, obj))
            self._views[name] = cached
        view = cached[1]
        if shared:
            return view
        goal = view["goal"]
        return {
            **view,
            "dims": list(view["dims"]),
            "position": list(view["position"]),
            "goal": None if goal is None else list(goal),
        }

    def _object_view(self, name: str, obj: WorldObject) -> dict[str, Any]:
        return {
            "shape": obj.shape,
            "dims": list(obj.dims),
            "position": rounded(self.object_position(name)),
            "yaw": round(obj.yaw, 4),
            "goal": None if obj.goal is None else rounded(obj.goal),
            "at_goal": obj.at_goal(self.goal_tolerance),
            "held_by": obj.held_by,
        }

    def robot_view(self, robot: str) -> dict[str, Any]:
        """Robot `robot` as observations show it: pose, job, what it holds."""
        body = self.robots[robot]
        base, arm = self.robot_pose(robot)
        job = body.job
        return {
            "name": robot,
            "profile": body.spec.name,
            "arm": rounded(arm),
            "base": rounded(base),
            "yaw": round(body.yaw, 4),
            "busy": None if job is None else job.command_id,
            "node": None if job is None else job.node,
            "paused": job is not None and job.paused_at is not None,
            "holding": None if job is None or not job.holding else job.object,
            "object": None if job is None else job.object,
        }

    def hand_view(self, hand: str, track_s: float = 0.0) -> dict[str, Any]:
        """A hand as a tracker sees it: the latest noisy sample, what it holds, and
        (with `track_s` > 0) the samples of the last `track_s` seconds as
        ``[t, x, y, z]`` rows."""
        h = self.hands[hand]
        job = h.job
        latest = h.track[-1][1:] if h.track else h.pose(self.t)
        view: dict[str, Any] = {
            "name": hand,
            "position": rounded(latest),
            "holding": h.holding or (job.object if job is not None and job.holding else None),
            "busy": None if job is None else job.command_id,
            "target": None if job is None else job.object,
        }
        if track_s > 0:
            since = self.t - track_s
            view["track"] = [[round(x, 4) for x in s] for s in h.track if s[0] > since]
        return view

    def observe(
        self,
        robot: str,
        t: float,
        since: int = 0,
        track_s: float = 0.5,
        *,
        shared: bool = False,
        objects_since: int | None = None,
    ) -> dict[str, Any]:
        """What `robot`'s driver sees at `t`, plus its events after sequence `since`;
        with hands in the world, ``hands`` carries each hand's last `track_s` seconds
        of tracked (noisy) samples. ``shared``: the views of objects nobody holds are
        the world's own (``object_view``), for a caller that encodes the reply at once
        and does not change it (the ZeroMQ server). With `objects_since` (a version
        from an earlier reply's ``objects_version``, 0 for all) ``objects`` holds only
        the objects whose view changed after it (``object_versions``)."""
        self.advance(t)
        if robot not in self.robots:
            return reply(False, "unknown_robot")
        if objects_since is None:
            objects = {name: self.object_view(name, shared=shared) for name in self.objects}
        else:
            objects = self._versions.changed_since(
                objects_since, self.objects, lambda name: self.object_view(name, shared=True)
            )
            if not shared:
                objects = {name: self.object_view(name) for name in objects}
        out = {
            "ok": True,
            "reason": None,
            "t": round(self.t, 4),
            "robot": self.robot_view(robot),
            "objects": objects,
            "events": self.events_since(since, robot),
            "seq": self.seq,
        }
        if objects_since is not None:
            out["objects_version"] = self._versions.version
        if self.hands:
            out["hands"] = {name: self.hand_view(name, track_s) for name in self.hands}
        return out

    def observe_hand(self, hand: str, t: float, since: int = 0) -> dict[str, Any]:
        """What the person owning `hand` sees at `t`: the true hand pose, every object,
        robot and hand, and the hand's events after sequence `since`."""
        self.advance(t)
        h = self.hands.get(hand)
        if h is None:
            return reply(False, "unknown_hand")
        view = self.hand_view(hand)
        view["position"] = rounded(h.pose(self.t))
        return {
            **reply(True, None),
            "t": round(self.t, 4),
            "hand": view,
            "objects": {name: self.object_view(name) for name in self.objects},
            "robots": {name: self.robot_view(name) for name in self.robots},
            "hands": {name: self.hand_view(name) for name in self.hands},
            "events": self.events_since(since, hand),
            "seq": self.seq,
        }

    def state(self, t: float, *, shared: bool = False) -> dict[str, Any]:
        """The whole world at `t` (the ``world.state`` body); ``shared`` as in ``observe``."""
        self.advance(t)
        out = {
            "t": round(self.t, 4),
            "objects": {name: self.object_view(name, shared=shared) for name in self.objects},
            "robots": {name: self.robot_view(name) for name in self.robots},
            "violations": len(self.violations),
        }
        if self.hands:
            out["hands"] = {name: self.hand_view(name) for name in self.hands}
        return out

    def info(self) -> dict[str, Any]:
        """Static description: robots with their profiles and start poses, objects."""
        return {
            "robots": {
                name: {"profile": b.spec.to_dict(), "base": list(b.base), "yaw": b.yaw}
                for name, b in self.robots.items()
            },
            "objects": sorted(self.objects),
            "goal_tolerance": self.goal_tolerance,
            "hands": {
                name: {"rest": list(h.rest), "speed": h.speed, "noise": h.noise}
                for name, h in self.hands.items()
            },
        }

    def events_since(self, seq: int, robot: str | None = None) -> list[dict[str, Any]]:
        """Logged events with sequence number > `seq` (optionally for one robot only)."""
        return self._log.since(seq, robot)

    @property
    def seq(self) -> int:
        """Sequence number of the latest event."""
        return self._log.seq
