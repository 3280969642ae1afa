"""What a task-tree robot knows of the world from its driver's observations: its arm
and base, the objects' shapes and goals, and which leaves the world shows done,
undone, or able to show done at all ("done means done", docs/protocol.md "Task
trees"). No I/O: the robot hands it each observation and reads the answers.

A driver sends a keyframe (every object) and deltas (the objects that changed); the
view keeps the merged world, and converts only the objects whose view changed (most
stand still), so a working robot's observation looks at the few leaves of objects that
moved and at every leaf once per keyframe.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from typing import Any

from teamtree.agents.runtime.observation_wire import ObjectView, ObservationBody, merge_objects
from teamtree.hardware.profiles import arm_model, can_place
from teamtree.hardware.profiles import profile as profile_spec
from teamtree.planners.tasktree import (
    ArmModel,
    EffectConfirmed,
    EffectUndone,
    EvidenceChanged,
    ShapePrimitive,
    TaskController,
    TaskTree,
    WorldShown,
)

__all__ = ["WorldView"]


class WorldView:
    """The robot `robot_id`'s view of the world for the leaves of `tree`, its body a
    `profile` (e.g. "pr2")."""

    def __init__(self, tree: TaskTree, robot_id: str, profile: str):
        self.tree = tree
        self.robot_id = robot_id
        self.profile = profile
        self.body = profile_spec(profile)
        self.arm: ArmModel | None = None
        self.base: tuple[float, ...] | None = None
        self.arm_position: tuple[float, float, float] | None = None
        self.body_name: str | None = None  # this robot's body, as the world names it
        self.objects: dict[str, ShapePrimitive] = {}  # the objects it may grasp
        self.goals: dict[str, tuple[float, ...]] = {}
        # the objects as the driver's keyframe and the deltas since show them
        self.world_objects: dict[str, ObjectView] | None = None
        self._views: dict[str, ObjectView] = {}  # per object: the view last absorbed
        # per object: (shape, goal, base) last checked and whether PLACE could reach it
        self._reach_last: dict[str, tuple[Any, Any, Any, bool]] = {}
        self._reach_cache: dict[tuple[Any, ...], bool] = {}
        # each leaf's object name (None: not a string), read once: the tree is fixed
        self.leaf_objects: tuple[tuple[str, str | None], ...] = tuple(
            (leaf, name if isinstance(name := tree[leaf].param_dict.get("object"), str) else None)
            for leaf in tree.leaves
        )
        self._leaves_of: dict[str, list[tuple[str, str]]] = {}
        for leaf, name in self.leaf_objects:
            if name is not None:
                self._leaves_of.setdefault(name, []).append((leaf, name))
        # leaves with a goal of their own (the world's at_goal is not about it)
        self.own_goal_leaves = frozenset(n for n in tree.leaves if "goal" in tree[n].param_dict)
        self._placed: set[str] = set()  # objects observed at their goals (``undone``)

    def merge(self, obs: ObservationBody) -> dict[str, ObjectView] | None:
        """The world `obs` shows, merged into the last (None: a delta before any
        keyframe, which the next keyframe replaces)."""
        objects = merge_objects(self.world_objects, obs)
        if objects is not None:
            self.world_objects = objects
        return objects

    def absorb(
        self, obs: ObservationBody, names: Iterable[str] | None = None
    ) -> tuple[set[str], bool]:
        """Take the robot's pose and the objects' shapes from `obs` (only objects in
        `names`, those a delta carried, when given). Returns the objects whose view
        changed, and whether any leaf's potential may have changed besides theirs
        (the arm or base moved, or a keyframe)."""
        robot = obs.robot
        self.body_name = robot.name
        moved = names is None or robot.arm != self.arm_position
        self.arm_position = robot.arm
        base = (*(robot.arm if robot.base is None else robot.base), robot.yaw)
        if self.arm is None or base != self.base:
            self.base = base
            self.arm = arm_model(self.profile, base[:3], yaw=base[3])
            moved = True
        objects = obs.objects
        views = self._views
        changed: set[str] = set()
        if names is None:  # every object: also forget those no longer shown
            names = objects
            for name in [n for n in views if n not in objects]:
                del views[name]
                self._forget(name)
                changed.add(name)
        for name in names:
            obj = objects.get(name)
            if obj is None or views.get(name) == obj:
                continue  # most objects stand still: convert the rest
            views[name] = obj
            changed.add(name)
            if obj.at_goal or obj.held_by not in (None, self.robot_id):
                self._forget(name)
                continue
            self.objects[name] = ShapePrimitive(obj.shape, obj.dims, obj.position, obj.yaw)
            if obj.goal is not None:
                self.goals[name] = obj.goal
            else:
                self.goals.pop(name, None)
        return changed, moved

    def _forget(self, name: str) -> None:
        self.objects.pop(name, None)
        self.goals.pop(name, None)

    def leaf_pairs(self, changed: set[str] | None) -> Iterable[tuple[str, str | None]]:
        """(leaf, object) for every leaf, or only for leaves of the `changed` objects."""
        if changed is None:
            return self.leaf_objects
        return [pair for name in changed for pair in self._leaves_of.get(name, ())]

    def confirmed(
        self, obs: ObservationBody, done: Collection[str], changed: set[str] | None = None
    ) -> list[str]:
        """Leaves not `done` whose object the world shows at its goal ("done means
        done": whoever put it there, e.g. a behaviour cancelled during its release).
        Only leaves without a ``goal`` parameter of their own: the world's ``at_goal``
        is about the object's configured goal. `changed`: the objects whose view
        changed (None: any may have)."""
        objects = obs.objects
        out = []
        own_goal = self.own_goal_leaves
        for leaf, name in self.leaf_pairs(changed):
            if name is None or leaf in done or leaf in own_goal:
                continue
            obj = objects.get(name)
            if obj is not None and obj.at_goal:
                out.append(leaf)
        return out

    def undone(
        self, obs: ObservationBody, done: Collection[str], changed: set[str] | None = None
    ) -> list[str]:
        """`done` leaves whose object this robot saw at its goal and now sees away from
        it ("undone means undone": whoever moved it, the leaf is open again). `changed`
        as in ``confirmed``. Only a move away after an observation at the goal counts,
        so an observation older than this robot's own ``behaviour.finished`` re-opens
        nothing."""
        objects, placed = obs.objects, self._placed
        out = []
        for name in objects if changed is None else changed:
            obj = objects.get(name)
            if obj is None:
                continue
            if obj.at_goal:
                placed.add(name)
            elif name in placed:
                placed.discard(name)
                out += [
                    leaf
                    for leaf, _ in self._leaves_of.get(name, ())
                    if leaf in done and leaf not in self.own_goal_leaves
                ]
        return out

    def evidence_leaves(self) -> frozenset[str]:
        """The leaves whose done the world can show, so a peer's word is not enough
        (``TaskController(evidence_leaves=...)``): those with an object and no goal of
        their own (as ``confirmed`` reads them) that this robot's world shows with a
        goal. An object the world does not show (an AGV's load, carried outside the
        simulated world) or shows without a goal can only be reported done by a peer.
        Before the driver's first keyframe every leaf with an object is one: a done
        (or a retained all-done snapshot) that a peer's name carries then would
        otherwise be believed for good; the keyframe frees the rest."""
        objects = self.world_objects
        return frozenset(
            leaf
            for leaf, name in self.leaf_objects
            if name is not None
            and leaf not in self.own_goal_leaves
            and (objects is None or (name in objects and objects[name].goal is not None))
        )

    def events(
        self,
        obs: ObservationBody,
        controller: TaskController,
        changed: set[str] | None,
        *,
        keyframe: bool,
    ) -> Iterator[EvidenceChanged | EffectConfirmed | EffectUndone | WorldShown]:
        """What an observation (already absorbed) tells `controller`: on a keyframe, the
        evidence leaves when they changed; then the leaves ``confirmed``, then those
        ``undone`` (`changed` as there); last, on a keyframe, ``WorldShown``. Lazily:
        each group is read from the controller once the events before it were
        handled."""
        if keyframe:  # every goal known
            evidence = self.evidence_leaves()
            if evidence != controller.trust.evidence_leaves:
                yield EvidenceChanged(evidence)
        yield from [EffectConfirmed(n) for n in self.confirmed(obs, controller.done, changed)]
        yield from [EffectUndone(n) for n in self.undone(obs, controller.done, changed)]
        if keyframe:
            yield WorldShown()

    def holds(self, node: str) -> bool:
        """Whether the world last showed `node`'s object held by this robot's body."""
        name = self.tree[node].param_dict.get("object")
        view = (self.world_objects or {}).get(name) if isinstance(name, str) else None
        return view is not None and self.body_name is not None and view.held_by == self.body_name

    def reachable(self, name: str, shape: ShapePrimitive) -> bool:
        """Whether the world would accept PLACE(name) from here (cached per pose)."""
        goal = self.goals.get(name)
        if goal is None or self.base is None:
            return True
        last = self._reach_last.get(name)  # the same objects as last time: no hashing
        if last is not None and last[0] is shape and last[1] is goal and last[2] is self.base:
            return last[3]
        key = (name, shape.position, goal, self.base)
        if key not in self._reach_cache:
            self._reach_cache[key] = can_place(
                self.body, self.base[:3], self.base[3], shape.position, goal
            )
        self._reach_last[name] = (shape, goal, self.base, self._reach_cache[key])
        return self._reach_cache[key]
