"""Hand commands: ``hand_reach`` moves a hand along a curved path to an object,
grasps it (``grasp_time``) and either holds it (``then="hold"``) or carries it to its
goal and releases it (``then="place"``); ``hand_place`` finishes a held object,
``hand_move`` moves an empty hand, ``hand_cancel`` stops it (putting down what it
holds)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from teamtree.broker import SpecificationError
from teamtree.hardware.profiles import Vec3
from teamtree.hardware.world.commands import Stage, reply
from teamtree.hardware.world.hands import HAND_THEN, HandJob, HumanHand
from teamtree.hardware.world.state import WorldState
from teamtree.hardware.world.vectors import dist, vec3


class HandCommands(WorldState):
    """The hand commands and the stage machine of a hand's job."""

    def hand_reach(
        self,
        hand: str,
        command_id: str,
        obj_name: str,
        t: float,
        then: str = "place",
        goal: Sequence[float] | None = None,
    ) -> dict[str, Any]:
        """Move `hand` to object `obj_name` and grasp it; then hold it or place it at
        its goal (`then`). A reach replaces an empty hand's current motion (a person
        changes their mind); a hand holding something answers ``busy``."""
        self.advance(t)
        h = self.hands.get(hand)
        if h is None:
            return reply(False, "unknown_hand")
        obj = self.objects.get(obj_name)
        reason: str | None = None
        target: Vec3 | None = None
        if then not in HAND_THEN:
            reason = "bad_params"
        elif h.holding is not None or (h.job is not None and h.job.holding):
            reason = "busy"
        elif obj is None:
            reason = "unknown_object"
        elif obj.held_by not in (None, hand):
            reason = "held"
        else:
            try:
                target = vec3(goal, "goal") if goal is not None else obj.goal
            except SpecificationError:
                reason = "bad_params"
            if reason is None and target is None and then == "place":
                reason = "no_goal"
        if reason is not None or obj is None:
            self._emit("failed", hand, command_id, None, ok=False, reason=reason)
            self.version += 1
            return {**reply(False, reason), "command_id": command_id, "status": "failed"}
        self._stop_hand(h, "replaced")
        job = HandJob(command_id, obj.name, target, then)
        job.legs.append(h.arc(Stage.APPROACH, h.position, obj.position, self.t, self._rng))  # type: ignore[arg-type]
        h.job = job
        self._emit("started", hand, command_id, None)
        self.version += 1
        return {**reply(True, None), "command_id": command_id, "status": "running"}

    def hand_place(
        self, hand: str, command_id: str, t: float, goal: Sequence[float] | None = None
    ) -> dict[str, Any]:
        """Carry the object `hand` holds to `goal` (default: its goal) and release it."""
        self.advance(t)
        h = self.hands.get(hand)
        if h is None:
            return reply(False, "unknown_hand")
        if h.holding is None or h.job is not None:
            reason = "busy" if h.job is not None else "not_holding"
            return {**reply(False, reason), "command_id": command_id, "status": "failed"}
        obj = self.objects[h.holding]
        try:
            target = vec3(goal, "goal") if goal is not None else obj.goal
        except SpecificationError:
            return reply(False, "bad_params")
        if target is None:
            return reply(False, "no_goal")
        job = HandJob(command_id, obj.name, target, "place", Stage.CARRY, holding=True)
        job.legs.append(h.arc(Stage.CARRY, h.position, target, self.t, self._rng))  # type: ignore[arg-type]
        h.job, h.holding = job, None
        self._emit("started", hand, command_id, None)
        self.version += 1
        return {**reply(True, None), "command_id": command_id, "status": "running"}

    def hand_move(
        self, hand: str, command_id: str, position: Sequence[float], t: float
    ) -> dict[str, Any]:
        """Move an empty `hand` to `position` (e.g. back to rest); replaces a reach."""
        self.advance(t)
        h = self.hands.get(hand)
        if h is None:
            return reply(False, "unknown_hand")
        try:
            target = vec3(position, "position")
        except SpecificationError:
            return reply(False, "bad_params")
        if h.holding is not None or (h.job is not None and h.job.holding):
            return {**reply(False, "busy"), "command_id": command_id, "status": "failed"}
        self._stop_hand(h, "replaced")
        job = HandJob(command_id, None, None, "move")
        job.legs.append(h.arc(Stage.APPROACH, h.position, target, self.t, self._rng))  # type: ignore[arg-type]
        h.job = job
        self._emit("started", hand, command_id, None)
        self.version += 1
        return {**reply(True, None), "command_id": command_id, "status": "running"}

    def hand_cancel(self, hand: str, t: float) -> dict[str, Any]:
        """Stop `hand` where it is; an object it holds is put down there."""
        self.advance(t)
        h = self.hands.get(hand)
        if h is None:
            return reply(False, "unknown_hand")
        self._stop_hand(h, "cancelled")
        if h.holding is not None:
            obj = self.objects[h.holding]
            obj.position, obj.held_by, obj.placements = h.position, None, 0  # type: ignore[assignment]
            h.holding = None
            self.version += 1
        return reply(True, None)

    def hand_pose(self, hand: str, t: float | None = None) -> Vec3:
        """Where `hand` is at `t` (default now), interpolated along its motion."""
        return self.hands[hand].pose(self.t if t is None else t)

    # -- internals -----------------------------------------------------------------

    def _sample_hands(self, until: float) -> None:
        """Record each hand's tracked position at every sample time up to `until`."""
        for h in self.hands.values():
            h.sample(until, self.hand_sample_s, self._rng)

    def _stop_hand(self, h: HumanHand, reason: str) -> None:
        job = h.job
        if job is None:
            return
        h.position = h.pose(self.t)
        if job.holding and job.object is not None:
            obj = self.objects[job.object]
            obj.position, obj.held_by, obj.placements = h.position, None, 0  # type: ignore[assignment]
        h.job = None
        self._emit("failed", h.name, job.command_id, None, ok=False, reason=reason)
        self.version += 1

    def _end_hand_job(self, h: HumanHand, ok: bool, reason: str | None) -> None:
        job = h.job
        assert job is not None
        h.job = None
        kind = "finished" if ok else "failed"
        self._emit(kind, h.name, job.command_id, None, ok=ok, reason=reason)
        self.version += 1

    def _finish_hand_leg(self, h: HumanHand, end: float) -> None:
        job = h.job
        assert job is not None
        leg = job.legs.popleft()
        h.position = leg.p1
        if job.legs:
            job.legs[0].start = end
            return
        if job.object is None:  # a plain move
            self._end_hand_job(h, True, None)
            return
        obj = self.objects[job.object]
        if job.stage is Stage.APPROACH:
            if obj.held_by not in (None, h.name):
                holders = [obj.held_by, h.name]
                self._violation("double_hold", obj.name, holders, job.command_id, None)  # type: ignore[arg-type]
                self._end_hand_job(h, False, "held")
                return
            if dist(obj.position, h.position) > 0.05:  # type: ignore[arg-type]
                self._end_hand_job(h, False, "moved")
                return
            obj.held_by, job.holding, job.stage = h.name, True, Stage.GRASP
            job.legs.append(h.pause(Stage.GRASP, h.grasp_time, end))
        elif job.stage is Stage.GRASP:
            if job.then == "hold":
                h.holding = obj.name
                self._end_hand_job(h, True, None)
                return
            job.stage = Stage.CARRY
            job.legs.append(h.arc(Stage.CARRY, h.position, job.goal, end, self._rng))  # type: ignore[arg-type]
        elif job.stage is Stage.CARRY:
            job.stage = Stage.RELEASE
            job.legs.append(h.pause(Stage.RELEASE, h.release_time, end))
        else:
            obj.held_by, obj.position = None, job.goal  # type: ignore[assignment]
            obj.placements += 1
            job.holding = False
            if obj.placements > 1:
                self._violation("placed_twice", obj.name, [h.name], job.command_id, None)
            self._end_hand_job(h, True, None)
            return
        self.version += 1
