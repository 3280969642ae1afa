"""Seed 002 §VI.A control graph costs and §III.B job completion by algebraic connectivity."""

import numpy as np
import pytest

from teamtree.broker import PlanningError
from teamtree.hardware import AssembledTeam, factory_robots
from teamtree.planners.capability import (
    JOBS,
    ControlGraph,
    KnowledgeGraph,
    algebraic_connectivity,
)

R = {r.robot_id: r for r in factory_robots()}


def test_costs_1_m_2m():
    team = AssembledTeam((R["l1"], R["m1"], R["s1"]))  # m = 3
    cg = ControlGraph.for_team(team, JOBS["job3c"])
    g = cg.graph
    assert g.edges["l1", "l1/L3"]["weight"] == 1  # ground locomotion: free
    assert g.edges["m1", "m1/L3"]["weight"] == 6  # not on the ground: 2m
    assert g.edges["m1", "m1/M1"]["weight"] == 3  # gripper at 8 < 9: redundant, m
    assert g.edges["s1", "s1/M1"]["weight"] == 1
    nodes, w = cg.weight_matrix()
    assert w.shape == (len(nodes), len(nodes)) and np.allclose(w, w.T)


def test_fig10_path_through_team():
    team = AssembledTeam((R["l1"], R["m1"], R["s1"]))
    cg = ControlGraph.for_team(team, JOBS["job3c"])
    route = cg.route("s1/P0", "move")
    assert route.path == ("s1/P0", "s1", "m1", "l1", "l1/L3") and route.cost == 4
    assert cg.route("s1/P0", "grasp").component == "s1/M1"
    with pytest.raises(PlanningError):
        cg.route("s1/P0", "fly")
    with pytest.raises(PlanningError):
        cg.route("nobody/P0", "move")


def test_algebraic_connectivity():
    path3 = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]])
    assert np.isclose(algebraic_connectivity(path3), 1.0)
    assert algebraic_connectivity(np.zeros((3, 3))) == 0


def test_job_completion_pick_and_place():
    job = JOBS["job2"]
    kg = KnowledgeGraph.for_job(job, [R["m1"], R["m2"]])
    kg.collaborate("m1", "m2")
    assert kg.collaborators("m1") == ["m2"]
    assert kg.job_connectivity() > 0 and not kg.job_complete(job.goal)
    kg.interact("m1", "m1/P0", "box1", "observe")
    kg.interact("m1", "m1/M1", "box1", "in-contact")
    assert kg.job_connectivity() == pytest.approx(0)  # box carried: disconnected
    kg.release("m1/M1", "box1", "place")
    assert kg.job_connectivity() > 0 and not kg.job_complete(job.goal)  # box2 still on table
    kg.interact("m2", "m2/M1", "box2", "in-contact")
    kg.release("m2/M1", "box2", "place")
    assert kg.job_complete(job.goal)
