"""The modified assemble search tree of seed 002 §V.C (Fig. 9) with available ports
(eq. 19).

The agent is the ancestor Υ; each layer adds one idle neighbour. A descendant is made
only while the parent's A_P >= 1 (a port is left), a path is checked only when its
A_P >= 0, and a new layer is built only when the current one holds no solution, so the
first solutions found use the fewest robots. g = 1 throughout (one ground robot), so an
agent with one port cannot start an assembly, as for S2 in §VII.F.2.

Robots with the same capability signature are interchangeable: nodes are counts per
signature group ("no repeated or redundant robots"), and each group is used in the order
the neighbours were given (pass them nearest or fullest-battery first).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from teamtree.hardware import AssembledTeam, RobotProfile, find_tower


def available_ports(ports: Sequence[int], ground: int = 1) -> int:
    """A_P = Σ P_i - 2(f - 1) - g (eq. 19) for the f robots with ``ports``."""
    f = len(ports)
    return sum(ports) - 2 * (f - 1) - ground


@dataclass(frozen=True)
class SearchResult:
    """Solutions of the first layer that has any; ``size`` robots each (agent included).

    ``expanded`` counts tree nodes built; ``checked`` the paths whose capability was
    compared with the requirement.
    """

    solutions: tuple[AssembledTeam, ...]
    size: int | None
    expanded: int
    checked: int


def assemble_search(
    agent: RobotProfile,
    neighbours: Sequence[RobotProfile],
    accept: Callable[[AssembledTeam], bool],
    *,
    max_members: int | None = None,
    may_accept: Callable[[Sequence[RobotProfile]], bool] | None = None,
) -> SearchResult:
    """Breadth-first assemble search (Fig. 9); ``accept`` says whether a tower does the job.

    Returns every accepted team (one tower per robot set, bottom first) of the smallest
    size; an empty result when no assembly works or the agent has no port to spare.

    ``may_accept`` is a necessary condition on a set of robots, whatever their order
    (e.g. every type the job needs is among them): a set that fails it is not tried
    tower by tower, and when the agent and every neighbour together fail it the search
    ends at once. Without it a job no team can do (its only heat camera busy) tried
    every order of every set up to the whole neighbourhood: a tower of n robots is
    tried in up to n! orders, minutes at 12 neighbours.
    """
    groups: list[list[RobotProfile]] = []
    index: dict[tuple, int] = {}
    for nb in neighbours:
        if nb.robot_id == agent.robot_id or nb.ports <= 0:
            continue
        key = nb.signature()
        if key not in index:
            index[key] = len(groups)
            groups.append([])
        groups[index[key]].append(nb)
    limit = max_members if max_members is not None else 1 + sum(len(g) for g in groups)
    expanded = checked = 0
    if available_ports([agent.ports]) < 1:
        return SearchResult((), None, expanded, checked)
    if may_accept is not None and not may_accept([agent] + [m for g in groups for m in g]):
        return SearchResult((), None, expanded, checked)
    frontier: list[tuple[int, ...]] = [tuple(0 for _ in groups)]
    size = 1
    while frontier and size < limit:
        size += 1
        seen: set[tuple[int, ...]] = set()
        layer: list[tuple[int, ...]] = []
        for node in frontier:
            if _ports(agent, groups, node) < 1:
                continue
            for gi, group in enumerate(groups):
                if node[gi] >= len(group):
                    continue
                child = (*node[:gi], node[gi] + 1, *node[gi + 1 :])
                if child in seen:
                    continue
                seen.add(child)
                layer.append(child)
        expanded += len(layer)
        solutions: list[AssembledTeam] = []
        for node in layer:
            if _ports(agent, groups, node) < 0:
                continue
            members = [agent] + [m for gi, c in enumerate(node) for m in groups[gi][:c]]
            if may_accept is not None and not may_accept(members):
                continue
            checked += 1
            tower = find_tower(members, accept)
            if tower is not None:
                solutions.append(tower)
        if solutions:
            return SearchResult(tuple(solutions), size, expanded, checked)
        frontier = layer
    return SearchResult((), None, expanded, checked)


def _ports(agent: RobotProfile, groups: list[list[RobotProfile]], node: tuple[int, ...]) -> int:
    ports = [agent.ports] + [m.ports for gi, c in enumerate(node) for m in groups[gi][:c]]
    return available_ports(ports)
