"""Dynamic resource allocation over a task tree (seed 004 §III.B-C, Alg. 1, eq. 1).

One round: the resource state is passed down the tree; each allowed leaf answers
with a ``Request`` (its needs, activation potential and whether it is possible);
an AND node runs FindCompatible (Alg. 1) over its descendants' flattened requests,
an OR node and a THEN node pass up one child's offer, a THEN node first skipping
children whose goal already holds; the root grants what reaches it. Behaviours keep
their resources while they work; when any finishes, the caller starts a new round.

Readings chosen where the paper is ambiguous:

- Alg. 1 as printed starts its second loop at ``j = i``, re-testing the request it
  already took; we start at ``i + 1`` (re-adding it could hand one pick two grippers).
- "Compatible set with the highest total potential": Alg. 1 is greedy; it is the
  default (``AndRule.ALG1``). ``AndRule.MAX_TOTAL`` enumerates subsets instead.
- Equal potentials (every pick and place) are ordered: a request whose claimant
  already owns a resource handed to it first, then tree order (left to right).
- eq. 1's n, "grippers available to the behaviour", counts free grippers plus those
  owned by the move or by the behaviour it hands on to (the place holding its
  object); a move followed by no pick or place gets n ≥ 1. A move with n = 0 (it
  leads to a pick no gripper could do) is not possible.
- A move hands *all* its resources to the next sibling in its THEN (leaf or subtree;
  none if it is the last child), on the heir's channel for each. If the heir is not
  granted in the next round the hand-off lapses and the resources are released
  (otherwise a heir that cannot run would hold the base forever).
- A pick hands its gripper to the next PLACE of the same object in its THEN (the
  object is in it); it releases base and head. A place releases everything.
- A THEN skips a child leaf whose goal holds (move: robot at the target; pick: object
  held; place: object placed) and looks at the next; the skip is committed only if
  a request it skipped to is granted, otherwise it reverts (nothing is recorded).
  Trailing children whose goals all hold are skipped at once.
- An OR passes up the offer of the child with the highest total feasible potential,
  or, once a child has started, only that child's offer.
- ``Mode.SEQUENTIAL`` is the one-at-a-time baseline (a pre-seed-004 HTT): every
  behaviour needs every resource exclusively, hands them all to its THEN successor
  (so each THEN runs start to finish), nothing is skipped, and eq. 1 uses n = 1.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import replace

from teamtree.broker import SpecificationError
from teamtree.hardware.resources import (
    Access,
    Channel,
    ResourceNeed,
    ResourceState,
    ResourceType,
)
from teamtree.planners.multitask.allocator_types import (
    Allocation,
    AndRule,
    Mode,
    MultitaskState,
    Request,
)
from teamtree.planners.multitask.leaf_links import LeafLinks
from teamtree.planners.multitask.leaf_requests import LeafRequests
from teamtree.planners.multitask.model import BehaviourKind, MultitaskProblem, World
from teamtree.planners.tasktree import NodeKind, NodeStatus, TaskNode

__all__ = [
    "Allocation",
    "AndRule",
    "Mode",
    "MultitaskAllocator",
    "MultitaskState",
    "Request",
    "find_compatible",
    "max_total_compatible",
]


def _sort_key(r: Request) -> tuple:
    return (-r.potential, not r.holds, r.order)


def _possible(r: Request, state: ResourceState) -> bool:
    return r.possible and state.resolve(r.needs, r.claimant) is not None


def _take(r: Request, state: ResourceState) -> ResourceState:
    assignment = state.resolve(r.needs, r.claimant)
    if assignment is None:
        raise SpecificationError(f"{r.leaf}: its resources are not available")
    return state.acquire(r.leaf, assignment, r.claimant)


def find_compatible(requests: Iterable[Request], state: ResourceState) -> tuple[Request, ...]:
    """FindCompatible (Alg. 1): the first possible request by potential, then every later
    one still possible once those taken hold their resources. Sorts the input itself."""
    ordered = sorted(requests, key=_sort_key)
    taken: list[Request] = []
    current = state
    for r in ordered:
        if _possible(r, current):
            taken.append(r)
            current = _take(r, current)
    return tuple(taken)


def max_total_compatible(
    requests: Iterable[Request], state: ResourceState, *, limit: int = 14
) -> tuple[Request, ...]:
    """The compatible subset with the highest total potential (§III.C.1 as worded).

    Exhaustive over the ``limit`` highest requests; ties go to Alg. 1's order.
    """
    ordered = [r for r in sorted(requests, key=_sort_key) if _possible(r, state)][:limit]
    best: tuple[Request, ...] = ()
    best_total = -1.0

    def walk(i: int, chosen: list[Request], current: ResourceState, total: float) -> None:
        nonlocal best, best_total
        if total > best_total + 1e-12:
            best, best_total = tuple(chosen), total
        for j in range(i, len(ordered)):
            r = ordered[j]
            if _possible(r, current):
                chosen.append(r)
                walk(j + 1, chosen, _take(r, current), total + r.potential)
                chosen.pop()

    walk(0, [], state, 0.0)
    return best


class MultitaskAllocator:
    """The seed 004 tree mechanics for one robot over one problem; pure.

    ``allocate(state)`` runs one round; ``start(state, granted)`` gives the granted
    behaviours their resources; ``finish(state, leaf)`` applies a behaviour's effect
    and its hand-offs. ``blocked`` leaves (a peer claims or works on them) are never
    requested; ``mark_done`` records a leaf a peer completed.
    """

    def __init__(
        self,
        problem: MultitaskProblem,
        *,
        mode: Mode | str = Mode.MULTITASK,
        and_rule: AndRule | str = AndRule.ALG1,
    ):
        self.problem = problem
        self.tree = problem.tree
        self.mode = Mode(mode)
        self.and_rule = AndRule(and_rule)
        self.behaviours = problem.behaviours
        self.links = LeafLinks(self.tree, self.behaviours)
        """Each leaf's claimant set, tree order, heir and place (fixed for the problem)."""
        self.leaf_requests = LeafRequests(problem, self.mode, self.links)
        """What each leaf asks of a round: needs, potential, preconditions, request."""

    # ------------------------------------------------------------------ state

    def initial_state(self) -> MultitaskState:
        """Robot at the start, every resource as the profile declares, nothing done."""
        return MultitaskState(self.problem.profile.initial_state(), World(self.problem.start))

    def is_complete(self, state: MultitaskState) -> bool:
        """True when the root's goal is satisfied."""
        return self._satisfied(state, self.tree.root)

    def satisfied(self, state: MultitaskState, node_id: str) -> bool:
        """True when node ``node_id``'s goal is satisfied (its leaves done or skipped)."""
        return self._satisfied(state, self.tree[node_id])

    def _satisfied(self, state: MultitaskState, node: TaskNode) -> bool:
        if node.is_leaf:
            return node.id in state.done or node.id in state.skipped
        kids = (self._satisfied(state, c) for c in node.children)
        return any(kids) if node.kind is NodeKind.OR else all(kids)

    def _committed(self, state: MultitaskState, node: TaskNode) -> bool:
        return any(
            leaf in state.done or leaf in state.skipped or leaf in state.working
            for leaf in self.tree.leaf_ids(node.id)
        )

    # ------------------------------------------------------------------ leaves

    @property
    def manipulation_potential(self) -> float:
        """Pick and place potential: above any move's (n_grippers / tolerance, §III.B)."""
        return self.leaf_requests.manipulation_potential

    def goal_holds(self, state: MultitaskState, leaf: str) -> bool:
        """The behaviour's goal already holds in the world (§III.C.2)."""
        return self.leaf_requests.goal_holds(state, leaf)

    def needs(self, state: MultitaskState, leaf: str) -> tuple[ResourceNeed, ...]:
        """What the behaviour declares (§III.B); the robot's position is the shared intention."""
        return self.leaf_requests.needs(state, leaf)

    def potential(self, state: MultitaskState, leaf: str) -> float:
        """Activation potential: eq. 1 for a move, a constant above any move for pick/place."""
        return self.leaf_requests.potential(state, leaf)

    def available_grippers(self, state: MultitaskState, leaf: str) -> int:
        """eq. 1's n for a move: free grippers plus those its heir already owns."""
        return self.leaf_requests.available_grippers(state, leaf)

    def request(self, state: MultitaskState, leaf: str, skips: tuple[str, ...] = ()) -> Request:
        """The leaf's request against the current resource state (§III.C, bottom-up)."""
        return self.leaf_requests.request(state, leaf, skips)

    # ------------------------------------------------------------------ the round

    def allocate(self, state: MultitaskState, blocked: Collection[str] = ()) -> Allocation:
        """One round of §III.C: offers bottom-up, FindCompatible at ANDs, the root grants.

        Returns the granted requests (possibly none), the rejected ones, and the skips
        to commit (those of granted requests and trailing satisfied children). Pure.
        """
        alloc = self._allocate(state, blocked)
        if not alloc.granted and state.handoffs:
            # nothing can run while reservations are held: let them lapse and ask again
            alloc = self._allocate(self._lapse(state, ()), blocked)
        return alloc

    def _allocate(self, state: MultitaskState, blocked: Collection[str]) -> Allocation:
        offers: dict[str, tuple[Request, ...]] = {}
        free_skips: list[str] = []
        top = self._offer(state, self.tree.root, set(blocked), offers, free_skips, False)
        if self.and_rule is AndRule.MAX_TOTAL:
            granted = max_total_compatible(top, state.resources)
        else:
            granted = find_compatible(top, state.resources)
        granted_ids = {r.leaf for r in granted}
        every = {r.leaf: r for rs in offers.values() for r in rs}
        rejected = tuple(r for leaf, r in sorted(every.items()) if leaf not in granted_ids)
        skips = [s for r in granted for s in r.skips] + free_skips
        return Allocation(
            granted, rejected, tuple(dict.fromkeys(skips)), tuple(dict.fromkeys(free_skips)), offers
        )

    def candidates(
        self, state: MultitaskState, blocked: Collection[str] = ()
    ) -> tuple[Request, ...]:
        """Every request the tree constraints allow now (ANDs pass all, ORs all children)."""
        offers: dict[str, tuple[Request, ...]] = {}
        return tuple(self._offer(state, self.tree.root, set(blocked), offers, [], True))

    def rounds(
        self, state: MultitaskState, blocked: Collection[str] = ()
    ) -> list[tuple[Request, ...]]:
        """Every non-empty compatible set of allowed requests (for the search planners).

        Sets respect ORs (one child each) and resources (Alg. 1's isPossible/updateState).
        """
        pool = [r for r in self.candidates(state, blocked) if r.possible]
        pool.sort(key=_sort_key)
        out: list[tuple[Request, ...]] = []

        def walk(
            i: int, chosen: list[Request], current: ResourceState, ors: dict[str, int]
        ) -> None:
            if chosen:
                out.append(tuple(chosen))
            for j in range(i, len(pool)):
                r = pool[j]
                if any(ors.get(o, c) != c for o, c in r.or_choices):
                    continue
                if not _possible(r, current):
                    continue
                chosen.append(r)
                walk(j + 1, chosen, _take(r, current), {**ors, **dict(r.or_choices)})
                chosen.pop()

        walk(0, [], state.resources, {})
        if not out and state.handoffs:
            return self.rounds(self._lapse(state, ()), blocked)
        return out

    def _offer(
        self,
        state: MultitaskState,
        node: TaskNode,
        blocked: set[str],
        offers: dict[str, tuple[Request, ...]],
        free_skips: list[str],
        collect_all: bool,
    ) -> list[Request]:
        if self._satisfied(state, node):
            return []
        if node.is_leaf:
            if node.id in state.working or node.id in blocked:
                return []
            out = [self.leaf_requests.request(state, node.id)]
        elif node.kind is NodeKind.THEN:
            out = self._offer_then(state, node, blocked, offers, free_skips, collect_all)
        elif node.kind is NodeKind.AND:
            flat = [
                r
                for c in node.children
                for r in self._offer(state, c, blocked, offers, free_skips, collect_all)
            ]
            if collect_all:
                out = flat
            elif self.and_rule is AndRule.MAX_TOTAL:
                out = list(max_total_compatible(flat, state.resources))
            else:
                out = list(find_compatible(flat, state.resources))
        else:
            out = self._offer_or(state, node, blocked, offers, free_skips, collect_all)
        offers[node.id] = tuple(out)
        return out

    def _offer_then(self, state, node, blocked, offers, free_skips, collect_all) -> list[Request]:
        kids = list(node.children)
        i = next(k for k, c in enumerate(kids) if not self._satisfied(state, c))
        skips: list[str] = []
        if self.mode is Mode.MULTITASK:
            while (
                i < len(kids)
                and kids[i].is_leaf
                and kids[i].id not in state.working
                and kids[i].id not in blocked
                and self.goal_holds(state, kids[i].id)
            ):
                skips.append(kids[i].id)
                i += 1
                while i < len(kids) and self._satisfied(state, kids[i]):
                    i += 1
        if i >= len(kids):
            free_skips.extend(skips)
            return []
        sub = self._offer(state, kids[i], blocked, offers, free_skips, collect_all)
        if not skips:
            return sub
        return [replace(r, skips=(*skips, *r.skips)) for r in sub]

    def _offer_or(self, state, node, blocked, offers, free_skips, collect_all) -> list[Request]:
        kids = list(node.children)
        chosen = next((k for k, c in enumerate(kids) if self._committed(state, c)), None)
        options = [chosen] if chosen is not None else list(range(len(kids)))
        per_child = []
        for k in options:
            sub = self._offer(state, kids[k], blocked, offers, free_skips, collect_all)
            per_child.append([replace(r, or_choices=((node.id, k), *r.or_choices)) for r in sub])
        if collect_all:
            return [r for sub in per_child for r in sub]
        best: list[Request] = []
        best_score = (-1, -1.0)
        for sub in per_child:
            score = (
                int(any(r.possible for r in sub)),
                sum(r.potential for r in sub if r.possible),
            )
            if score > best_score:
                best, best_score = sub, score
        return best

    # ------------------------------------------------------------------ execution

    def start(
        self, state: MultitaskState, granted: Iterable[Request | str], skipped: Iterable[str] = ()
    ) -> MultitaskState:
        """Give the granted behaviours their resources, commit ``skipped``, lapse unused hand-offs.

        ``granted`` may be requests or leaf ids (recomputed against ``state``). Raises
        SpecificationError if a grant conflicts with the state.
        """
        requests = [
            self.leaf_requests.request(state, g) if isinstance(g, str) else g for g in granted
        ]
        leaves = [r.leaf for r in requests]
        state = self._lapse(state, leaves)
        resources = state.resources
        for r in requests:
            resources = _take(r, resources) if r.needs else resources
        return replace(
            state,
            resources=resources,
            working=state.working | frozenset(leaves),
            skipped=state.skipped | frozenset(skipped),
        )

    def _lapse(self, state: MultitaskState, granted: Collection[str]) -> MultitaskState:
        if not state.handoffs:
            return state
        claimants = set().union(*(self.links.claimant[g] for g in granted)) if granted else set()
        resources = state.resources
        for name, heir in state.handoffs:
            if heir not in claimants:
                resources = resources.release(heir, {name})
        return replace(state, resources=resources, handoffs=frozenset())

    def finish(self, state: MultitaskState, leaf: str) -> MultitaskState:
        """The behaviour completed: apply its effect, hand on or release its resources (§III.B)."""
        b = self.behaviours[leaf]
        world = state.world
        resources = state.resources
        if b.kind is BehaviourKind.MOVE:
            world = replace(world, robot=b.target)
        elif b.kind is BehaviourKind.PICK:
            grip = next(
                (r.name for r in resources.of_type(ResourceType.GRIPPER) if leaf in r.owners),
                None,
            )
            if grip is not None and b.object is not None:
                world = replace(world, held=world.held | {(b.object, grip)})
        else:
            grip = world.holder(b.object or "")
            world = replace(
                world,
                held=frozenset(p for p in world.held if p[0] != b.object),
                placed=world.placed | {b.object or ""},
            )
        after = replace(state, world=world)
        handoffs: set[tuple[str, str]] = set()
        heir = self.links.heir.get(leaf)
        heir_open = heir is not None and not self._satisfied(after, self.tree[heir])
        owned = resources.owned_by({leaf})
        if self.mode is Mode.SEQUENTIAL or b.kind is BehaviourKind.MOVE:
            if heir_open and owned:
                assert heir is not None
                channels = self._heir_channels(after, heir)
                resources = resources.transfer(leaf, heir, owned, channels)
                handoffs = {(name, heir) for name in owned}
            else:
                resources = resources.release(leaf)
        elif b.kind is BehaviourKind.PICK:
            place = self.links.place_for.get(leaf)
            grips = {r.name for r in resources.of_type(ResourceType.GRIPPER) if leaf in r.owners}
            if place is not None:
                hold = {g: Channel(Access.EXCLUSIVE, f"hold {b.object}") for g in grips}
                resources = resources.transfer(leaf, place, grips, hold)
            resources = resources.release(leaf, set(owned) - grips)
        else:
            resources = resources.release(leaf)
        return replace(
            after,
            resources=resources,
            done=state.done | {leaf},
            working=state.working - {leaf},
            handoffs=state.handoffs | frozenset(handoffs),
        )

    def _heir_channels(self, state: MultitaskState, heir: str) -> dict[str, Channel]:
        node = self.tree[heir]
        if not node.is_leaf:
            return {}
        needs = self.leaf_requests.needs(state, heir)
        out: dict[str, Channel] = {}
        for r in state.resources:
            for n in needs:
                if n.name == r.name or (n.name is None and n.type == r.type):
                    out[r.name] = n.channel
                    break
        return out

    def mark_done(self, state: MultitaskState, leaf: str) -> MultitaskState:
        """A peer completed ``leaf`` (seed 000 peer rule); the world comes from observations."""
        return replace(state, done=state.done | {leaf})

    def statuses(
        self, state: MultitaskState, alloc: Allocation | None = None
    ) -> dict[str, NodeStatus]:
        """Every node's status: done, skipped, working, active (requested this round), inactive."""
        asked = {r.leaf for rs in (alloc.offers.values() if alloc else ()) for r in rs}
        out: dict[str, NodeStatus] = {}
        for node in reversed(list(self.tree)):
            nid = node.id
            if node.is_leaf:
                if nid in state.skipped:
                    out[nid] = NodeStatus.SKIPPED
                elif nid in state.done:
                    out[nid] = NodeStatus.DONE
                elif nid in state.working:
                    out[nid] = NodeStatus.WORKING
                elif nid in asked:
                    out[nid] = NodeStatus.ACTIVE
                else:
                    out[nid] = NodeStatus.INACTIVE
            elif self._satisfied(state, node):
                out[nid] = NodeStatus.DONE
            else:
                kids = {out[c.id] for c in node.children}
                if NodeStatus.WORKING in kids:
                    out[nid] = NodeStatus.WORKING
                elif NodeStatus.ACTIVE in kids:
                    out[nid] = NodeStatus.ACTIVE
                else:
                    out[nid] = NodeStatus.INACTIVE
        return out
