"""What one leaf asks of a round (§III.B-C, eq. 1): the resources its behaviour
declares, its activation potential, its preconditions in the world, whether its goal
already holds, and the ``Request`` that carries them up the tree.

One module because these are all questions about a single leaf against the state;
the allocator's tree walk, hand-offs and search planners ask them, never the reverse.
"""

from __future__ import annotations

from teamtree.hardware.resources import Access, ResourceNeed, ResourceType
from teamtree.planners.multitask.allocator_types import Mode, MultitaskState, Request
from teamtree.planners.multitask.leaf_links import LeafLinks
from teamtree.planners.multitask.model import BehaviourKind, MultitaskProblem, World, distance

__all__ = ["LeafRequests"]


class LeafRequests:
    """Needs, potential, preconditions and requests of the problem's leaves; pure."""

    def __init__(self, problem: MultitaskProblem, mode: Mode, links: LeafLinks) -> None:
        self.problem = problem
        self.tree = problem.tree
        self.mode = mode
        self.behaviours = problem.behaviours
        self.links = links
        grippers = max(1, problem.n_grippers)
        self.manipulation_potential = 1.0 + grippers / problem.tolerance
        """Pick and place potential: above any move's (n_grippers / tolerance, §III.B)."""

    def _at(self, world: World, point: tuple[float, float]) -> bool:
        return distance(world.robot, point) <= self.problem.tolerance

    def goal_holds(self, state: MultitaskState, leaf: str) -> bool:
        """The behaviour's goal already holds in the world (§III.C.2)."""
        b = self.behaviours[leaf]
        w = state.world
        if b.kind is BehaviourKind.MOVE:
            return self._at(w, b.target)
        if b.kind is BehaviourKind.PICK:
            return w.holder(b.object or "") is not None or b.object in w.placed
        return b.object in w.placed

    def needs(self, state: MultitaskState, leaf: str) -> tuple[ResourceNeed, ...]:
        """What the behaviour declares (§III.B); the robot's position is the shared intention."""
        if self.mode is Mode.SEQUENTIAL:
            return tuple(
                ResourceNeed(r.type, Access.EXCLUSIVE, "whole robot", name=r.name)
                for r in state.resources
                if not r.out_of_service
            )
        b = self.behaviours[leaf]
        if b.kind is BehaviourKind.MOVE:
            return (ResourceNeed(ResourceType.BASE, Access.EXCLUSIVE, f"go to {_fmt(b.target)}"),)
        here = _fmt(state.world.robot)
        if b.kind is BehaviourKind.PICK:
            gripper = ResourceNeed(ResourceType.GRIPPER, Access.EXCLUSIVE, f"hold {b.object}")
        else:
            holder = state.world.holder(b.object or "")
            gripper = ResourceNeed(
                ResourceType.GRIPPER, Access.EXCLUSIVE, f"hold {b.object}", name=holder or "?"
            )
        return (
            ResourceNeed(ResourceType.BASE, Access.SHARED, f"still at {here}"),
            gripper,
            ResourceNeed(ResourceType.HEAD, Access.SHARED, f"look at {here}"),
        )

    def potential(self, state: MultitaskState, leaf: str) -> float:
        """Activation potential: eq. 1 for a move, a constant above any move for pick/place."""
        b = self.behaviours[leaf]
        if b.kind is not BehaviourKind.MOVE:
            return self.manipulation_potential
        d = max(distance(state.world.robot, b.target), self.problem.tolerance)
        return self.available_grippers(state, leaf) / d

    def available_grippers(self, state: MultitaskState, leaf: str) -> int:
        """eq. 1's n for a move: free grippers plus those its heir already owns."""
        if self.mode is Mode.SEQUENTIAL:
            return 1
        heir = self.links.heir.get(leaf)
        ids = {leaf} | ({heir} if heir else set())
        n = sum(
            1
            for r in state.resources.of_type(ResourceType.GRIPPER)
            if r.free or (r.owners and r.owners <= ids)
        )
        heir_manipulates = (
            heir is not None
            and self.tree[heir].is_leaf
            and self.behaviours[heir].kind is not BehaviourKind.MOVE
        )
        return n if heir_manipulates else max(n, 1)

    def _preconditions(self, state: MultitaskState, leaf: str) -> str:
        b = self.behaviours[leaf]
        w = state.world
        if b.kind is BehaviourKind.MOVE:
            return "" if self.available_grippers(state, leaf) > 0 else "no gripper for what follows"
        if not self._at(w, b.target):
            return "robot not at the spot"
        if b.kind is BehaviourKind.PICK:
            if w.holder(b.object or "") is not None or b.object in w.placed:
                return "object already picked"
            return ""
        return "" if w.holder(b.object or "") is not None else "object not in a gripper"

    def request(self, state: MultitaskState, leaf: str, skips: tuple[str, ...] = ()) -> Request:
        """The leaf's request against the current resource state (§III.C, bottom-up)."""
        needs = self.needs(state, leaf)
        claimant = self.links.claimant[leaf]
        reason = self._preconditions(state, leaf)
        if not reason and state.resources.resolve(needs, claimant) is None:
            reason = "resources busy"
        return Request(
            leaf=leaf,
            behaviour=self.behaviours[leaf],
            potential=self.potential(state, leaf),
            possible=not reason,
            needs=needs,
            claimant=claimant,
            holds=bool(state.resources.owned_by(claimant)),
            order=self.links.order[leaf],
            skips=skips,
            reason=reason,
        )


def _fmt(p: tuple[float, float]) -> str:
    return f"{p[0]:.2f},{p[1]:.2f}"
