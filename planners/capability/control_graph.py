"""Hardware control of a team by least-cost path, seed 002 §VI.A (Fig. 10).

W(G^R) joins robots (collaboration relations, cost 1) and each robot to its components
(control relations): cost 1 for a free component, m for a redundant one (not requested
by the job), 2m for one not available in the assembly (the locomotion of a robot that is
not on the ground), m being the number of team members. An action goes to the component
reached by the cheapest path from the sensing component (Dijkstra); ties go to the
cheaper last edge, then the node name.

Choice: a component is "requested" when it meets some demand of its domain (level and
position, raised to its place in the tower); other components are redundant.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

from teamtree.broker import PlanningError
from teamtree.hardware import AssembledTeam, Component, RobotProfile
from teamtree.planners.capability.jobs import JobSpec


def component_node(robot_id: str, component: Component, index: int) -> str:
    """Graph node name of a component, e.g. ``m1/M1`` (robot m1, component 1, manipulation)."""
    return f"{robot_id}/{component.domain.short}{index}"


@dataclass(frozen=True)
class ControlRoute:
    """The least-cost path from a sensing component to the component that acts."""

    action: str
    path: tuple[str, ...]
    cost: float
    robot: str
    component: str


def _meets(c: Component, demand: Component) -> bool:
    return (
        c.domain == demand.domain
        and c.level >= demand.level
        and all(a >= b for a, b in zip(c.position, demand.position, strict=True))
    )


class ControlGraph:
    """W(G^R) for one team; build it with :meth:`for_team`."""

    def __init__(self, graph: nx.Graph, members: Sequence[str]) -> None:
        self.graph = graph
        self.members = tuple(members)

    @classmethod
    def for_team(
        cls,
        team: AssembledTeam | Sequence[RobotProfile],
        job: JobSpec | None = None,
        *,
        links: Iterable[tuple[str, str]] | None = None,
    ) -> ControlGraph:
        """The weighted robot layer of a team.

        An :class:`AssembledTeam` is linked along its tower and its non-ground locomotion
        is unavailable; a plain list of robots (partnership) is linked as a star from the
        first one unless ``links`` is given. Without a job every component is free.
        """
        g = nx.Graph()
        if isinstance(team, AssembledTeam):
            entries = team.member_components()
            ids = list(team.ids)
            edges = list(links) if links is not None else team.links()
        else:
            ids = [r.robot_id for r in team]
            entries = [(r.robot_id, i, c, True) for r in team for i, c in enumerate(r.components)]
            edges = list(links) if links is not None else [(ids[0], x) for x in ids[1:]]
        m = len(ids)
        for rid in ids:
            g.add_node(rid, kind="robot")
        for a, b in edges:
            g.add_edge(a, b, weight=1.0, relation="collaboration")
        demands = job.demands if job is not None else ()
        for rid, i, comp, usable in entries:
            node = component_node(rid, comp, i)
            if not usable:
                cost = 2.0 * m
            elif demands and not any(_meets(comp, d) for d in demands):
                cost = float(m)
            else:
                cost = 1.0
            g.add_node(node, kind="component", robot=rid, actions=comp.actions, domain=comp.domain)
            g.add_edge(rid, node, weight=cost, relation="control")
        return cls(g, ids)

    def weight_matrix(self) -> tuple[list[str], np.ndarray]:
        """(node order, W(G^R)): the adjacency matrix with edge costs (0 = no edge)."""
        nodes = sorted(self.graph.nodes)
        w = nx.to_numpy_array(self.graph, nodelist=nodes, weight="weight")
        return nodes, w

    def route(self, source: str, action: str) -> ControlRoute:
        """Least-cost path from ``source`` to a component with ``action``.

        Raises PlanningError when the source is unknown or no component can act.
        """
        if source not in self.graph:
            raise PlanningError(f"unknown sensing component {source!r}")
        dist, paths = nx.single_source_dijkstra(self.graph, source, weight="weight")
        targets = [
            n
            for n, data in self.graph.nodes(data=True)
            if data.get("kind") == "component" and action in data.get("actions", ()) and n in dist
        ]
        if not targets:
            raise PlanningError(f"no team component can {action!r}")

        def key(n: str) -> tuple[float, float, str]:
            last = self.graph.edges[self.graph.nodes[n]["robot"], n]["weight"]
            return (dist[n], last, n)

        target = min(targets, key=key)
        return ControlRoute(
            action,
            tuple(paths[target]),
            float(dist[target]),
            self.graph.nodes[target]["robot"],
            target,
        )
