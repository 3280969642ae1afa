"""The two-layer ontological dynamic knowledge graph (ODKG) of seed 002 §III.B.

Robot layer G^R: robots and their components; robots joined by undirected
collaboration relations, robots to components by directed control relations. Job
layer G^job: objects with attributes (kept on the node, the 'has_attribute' relation)
and interaction relations between objects (``box1 on table``). Cross-layer
interactions join a component to an object (``in-contact``, ``observe``).

A job is complete when the job layer is connected, λ2(L(G^job)) > 0 with L = D - A
(eq. 1), and its relations equal the goal's. A held object has no job-layer relation,
so the layer is disconnected while it is carried.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import networkx as nx
import numpy as np

from teamtree.broker import SpecificationError
from teamtree.hardware import RobotProfile
from teamtree.planners.capability.control_graph import component_node
from teamtree.planners.capability.jobs import JobSpec, Relation

CONNECTED_EPS = 1e-9


def laplacian(adjacency: np.ndarray) -> np.ndarray:
    """L = D - A (§III.A)."""
    a = np.asarray(adjacency, dtype=float)
    return np.diag(a.sum(axis=1)) - a


def algebraic_connectivity(adjacency: np.ndarray) -> float:
    """The second smallest eigenvalue of L (0 for one node or a disconnected graph)."""
    a = np.asarray(adjacency, dtype=float)
    if a.shape[0] < 2:
        return 0.0
    eig = np.linalg.eigvalsh(laplacian(a))
    return float(eig[1])


class KnowledgeGraph:
    """ODKG with a robot layer, a job layer and cross-layer interactions."""

    def __init__(self) -> None:
        self.robots = nx.DiGraph()
        self.job = nx.Graph()
        self.cross: set[tuple[str, str, str]] = set()

    # robot layer
    def add_robot(self, profile: RobotProfile) -> None:
        """Add a robot and its components (control relations)."""
        self.robots.add_node(profile.robot_id, kind="robot", profile=profile)
        for i, c in enumerate(profile.components):
            node = component_node(profile.robot_id, c, i)
            self.robots.add_node(node, kind="component", component=c)
            self.robots.add_edge(profile.robot_id, node, relation="control")

    def collaborate(self, a: str, b: str) -> None:
        """Undirected collaboration relation between two robots."""
        for r in (a, b):
            if self.robots.nodes.get(r, {}).get("kind") != "robot":
                raise SpecificationError(f"unknown robot {r!r}")
        self.robots.add_edge(a, b, relation="collaboration")
        self.robots.add_edge(b, a, relation="collaboration")

    def collaborators(self, robot: str) -> list[str]:
        """Robots joined to ``robot`` by a collaboration relation."""
        return sorted(
            n
            for n in self.robots.successors(robot)
            if self.robots.edges[robot, n]["relation"] == "collaboration"
        )

    # job layer
    def add_object(self, name: str, **attributes: Any) -> None:
        """Add (or update) a job-layer object with attributes."""
        self.job.add_node(name, **attributes)

    def relate(self, a: str, relation: str, b: str) -> None:
        """Set the interaction ``a relation b`` (replaces any relation between a and b)."""
        for n in (a, b):
            if n not in self.job:
                self.job.add_node(n)
        self.job.add_edge(a, b, relation=relation, subject=a)

    def unrelate(self, a: str) -> None:
        """Remove every job-layer relation of ``a`` (it was picked up)."""
        self.job.remove_edges_from(list(self.job.edges(a)))

    def relations(self) -> set[Relation]:
        """The job layer's relations as (subject, relation, object)."""
        out: set[Relation] = set()
        for u, v, d in self.job.edges(data=True):
            s = d["subject"]
            o = v if s == u else u
            out.add((s, d["relation"], o))
        return out

    # cross-layer
    def interact(self, robot: str, component: str, obj: str, kind: str) -> None:
        """A cross-layer interaction, e.g. ("m1", "m1/M1", "box1", "in-contact")."""
        self.cross.add((component, kind, obj))
        if kind == "in-contact":
            self.unrelate(obj)

    def release(self, component: str, obj: str, onto: str) -> None:
        """End the in-contact interaction and put ``obj`` on ``onto``."""
        self.cross.discard((component, "in-contact", obj))
        self.relate(obj, "on", onto)

    # completion
    def job_connectivity(self) -> float:
        """λ2 of L(G^job)."""
        nodes = sorted(self.job.nodes)
        return algebraic_connectivity(nx.to_numpy_array(self.job, nodelist=nodes, weight=None))

    def job_complete(self, goal: Iterable[Relation]) -> bool:
        """Connected job layer and relations equal to the goal (§III.B)."""
        return self.job_connectivity() > CONNECTED_EPS and self.relations() == set(goal)

    @classmethod
    def for_job(cls, job: JobSpec, robots: Iterable[RobotProfile] = ()) -> KnowledgeGraph:
        """The ODKG of a job's initial state (and optionally its team's robot layer)."""
        kg = cls()
        for r in robots:
            kg.add_robot(r)
        for name in job.objects:
            kg.add_object(name)
        for a, rel, b in job.initial:
            kg.relate(a, rel, b)
        return kg
