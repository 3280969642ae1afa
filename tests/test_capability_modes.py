"""Jobs 1-5 end in the working modes seed 002 reports (§VII.B-F)."""

import pytest

from teamtree.broker import NoCapableAgentError
from teamtree.hardware import factory_robots
from teamtree.planners.capability import (
    JOBS,
    ControlGraph,
    WorkingMode,
    allowed_modes,
    decide_mode,
)

R = {r.robot_id: r for r in factory_robots()}


def others(agent, ids=None):
    pool = R.values() if ids is None else [R[i] for i in ids]
    return [r for r in pool if r.robot_id != agent]


def test_fig3_branches():
    assert allowed_modes(True, False) == (WorkingMode.SOLO, WorkingMode.PARTNERSHIP)
    assert allowed_modes(False, False) == (WorkingMode.SUBCONTRACT,)
    assert allowed_modes(False, True) == (WorkingMode.ASSEMBLY, WorkingMode.SUBCONTRACT)


@pytest.mark.parametrize("method", [1, 2])
def test_job1_assembly_with_o1(method):
    """§VII.B/E, Fig. 18(c): M assembles with O1; both methods agree."""
    s = decide_mode(R["m1"], JOBS["job1"], others("m1"), method)
    assert s.mode == WorkingMode.ASSEMBLY and s.helpers == ("o1",)
    assert s.team is not None and s.team.ids == ("m1", "o1")


@pytest.mark.parametrize("method", [1, 2])
def test_job1_non_assemblable_agent_cannot(method):
    """§VII.C: job 1 cannot be completed by a non-assemblable agent."""
    with pytest.raises(NoCapableAgentError):
        decide_mode(R["b1"], JOBS["job1"], others("b1"), method)


def test_job2_method1_partnership_with_s1():
    """§VII.F.1, Fig. 19: S2 shares job 2 with S1."""
    s = decide_mode(R["s2"], JOBS["job2"], others("s2"), 1)
    assert s.mode == WorkingMode.PARTNERSHIP and s.helpers == ("s1",)
    assert not any(k.startswith("o") for k in s.scores)  # type O robots do not grant


def test_job2_method2_subcontract_to_s1():
    """§VII.F.2: S2 lacks a type-1 manipulator and ports; four subcontract solutions, S1 best."""
    s = decide_mode(R["s2"], JOBS["job2"], others("s2"), 2)
    assert s.mode == WorkingMode.SUBCONTRACT and s.helpers == ("s1",)
    assert {k[0] for k in s.scores} == {"b", "l", "m", "s"}


def test_job2_partnership_and_solo_when_partner_lacks_power():
    """§VII.G: M2 works with M1; with M1 out of battery (not idle) it works solo."""
    s = decide_mode(R["m2"], JOBS["job2"], [R["m1"]], 1)
    assert s.mode == WorkingMode.PARTNERSHIP and s.helpers == ("m1",)
    assert decide_mode(R["m2"], JOBS["job2"], [], 1).mode == WorkingMode.SOLO
    cg = ControlGraph.for_team([R["m2"], R["m1"]], JOBS["job2"])
    assert cg.route("m2/P0", "move").cost == 2  # own locomotion, cost 2


@pytest.mark.parametrize("method", [1, 2])
def test_job3a_b_and_l_solo_or_partnership(method):
    for agent in ("b1", "l1"):
        s = decide_mode(R[agent], JOBS["job3a"], others(agent), method)
        assert s.mode == WorkingMode.PARTNERSHIP
        assert decide_mode(R[agent], JOBS["job3a"], [], method).mode == WorkingMode.SOLO


def test_job3a_m_assembles_with_s1():
    """§VII.B.1 (passive method), Fig. 12(c): M3 reaches 4 units by assembling with S1;
    Fig. 15's neighbours L1, S1, O1. S1 fills C^req (θ^req) better than L1 matches C^job."""
    s = decide_mode(R["m3"], JOBS["job3a"], others("m3", ["l1", "s1", "o1"]), 1)
    assert s.mode == WorkingMode.ASSEMBLY and s.helpers == ("s1",)
    assert s.team is not None and s.team.ids == ("m3", "s1") and s.team.height == 5
    assert s.scores["s1:req"] > s.scores["l1:job"] > s.scores["l1:req"]


def test_job3a_method2_subcontracts_to_an_idle_l1():
    """The paper reports 3(a) for the passive method only. Under method 2 every solution
    is ranked by θ̂ over component counts (eq. 20, §V.C): L1 alone has q̂ = [1, 2, 1],
    distance 1 from the job's one-per-domain demand, θ̂ = 500; the tower M3+S1 has
    q̂ = [2, 3, 1] (S1's wheels are off the ground), distance √5, θ̂ = 309. So M3
    subcontracts to L1 whenever L1 is an idle neighbour (docs/favors.md, "Job 3(a)")."""
    s = decide_mode(R["m3"], JOBS["job3a"], others("m3", ["l1", "s1", "o1"]), 2)
    assert s.mode == WorkingMode.SUBCONTRACT and s.helpers == ("l1",)
    # every solution and its distance; O1 neither fits nor completes a tower
    root = {"l1": 1, "m3+s1": 5**0.5, "l1+m3": 10**0.5}  # L1+M3: q̂ = [2, 4, 1]
    assert s.scores == pytest.approx({k: 1000 / (1 + d) for k, d in root.items()})


@pytest.mark.parametrize("method", [1, 2])
def test_job3a_m3_assembles_with_s1_when_l1_is_not_idle(method):
    """Fig. 12(c)'s team under both methods when L1 is not an idle neighbour (busy, or at
    30 % battery or less, §II.B): the tower M3 + S1 is then the only solution."""
    s = decide_mode(R["m3"], JOBS["job3a"], others("m3", ["s1", "o1"]), method)
    assert s.mode == WorkingMode.ASSEMBLY and s.helpers == ("s1",)
    assert s.team is not None and s.team.ids == ("m3", "s1") and s.team.height == 5


@pytest.mark.parametrize("method", [1, 2])
def test_job3b_l_assembles_with_m(method):
    """§VII.E: no single robot reaches 8 units; L assembles with M, uses M's gripper."""
    s = decide_mode(R["l1"], JOBS["job3b"], others("l1"), method)
    assert s.mode == WorkingMode.ASSEMBLY and s.team is not None
    assert s.team.ids == ("l1", "m1")
    cg = ControlGraph.for_team(s.team, JOBS["job3b"])
    assert cg.route("m1/P0", "grasp").robot == "m1"
    assert cg.route("m1/P0", "move").robot == "l1"


def test_job3c_method2_three_robot_tower():
    """§VII.B.2, Fig. 15: M3 with neighbours L1, S1, O1 assembles L1 + M3 + S1."""
    s = decide_mode(R["m3"], JOBS["job3c"], others("m3", ["l1", "s1", "o1"]), 2)
    assert s.mode == WorkingMode.ASSEMBLY and s.team is not None
    assert s.team.ids == ("l1", "m3", "s1") and s.team.height == 10


def test_job3c_method1_needs_three_robots():
    """Method 1 finds one helper at most (documented choice): 3(c) needs method 2."""
    with pytest.raises(NoCapableAgentError):
        decide_mode(R["m3"], JOBS["job3c"], others("m3"), 1)


@pytest.mark.parametrize("method", [1, 2])
def test_job4_solo_subcontract_assembly(method):
    """§VII.A/C: S2 solo; a non-assemblable robot subcontracts to S2; M may assemble with O2."""
    assert decide_mode(R["s2"], JOBS["job4"], others("s2"), method).mode == WorkingMode.SOLO
    s = decide_mode(R["b1"], JOBS["job4"], others("b1"), method)
    assert s.mode == WorkingMode.SUBCONTRACT and s.helpers == ("s2",)
    s = decide_mode(R["m1"], JOBS["job4"], others("m1", ["o2", "o1", "b2"]), method)
    assert s.mode == WorkingMode.ASSEMBLY and s.helpers == ("o2",)
    s = decide_mode(R["m1"], JOBS["job4"], others("m1"), method)
    assert s.mode in (WorkingMode.ASSEMBLY, WorkingMode.SUBCONTRACT)


R24 = {r.robot_id: r for r in factory_robots(24)}


@pytest.mark.parametrize(
    ("job", "agent", "team", "with_two_ls"),
    [
        ("job3b", "l1", ("l1", "m1"), "l1+l2"),
        ("job3b", "l2", ("l2", "m1"), "l1+l2"),
        ("job5", "l1", ("l1", "m1", "o1"), "l1+l2+o1"),
        ("job5", "l2", ("l2", "m1", "o1"), "l1+l2+o1"),
    ],
)
def test_method2_with_two_ls_in_reach_takes_l_plus_m(job, agent, team, with_two_ls):
    """§VII.E's L + M (3(b)) and L + M1 + O1 (job 5) with Table II's mix twice, both Ls
    idle. L and M have the same component counts (Table III), so eq. 20 scores the tower
    with the other L exactly as the one with an M (q̂ = [2, 4, 1] or [3, 4, 1], θ̂ 240);
    eq. 18 leaves the tie open and the planner takes the helpers with the fewest assembly
    ports (the smallest A_P, eq. 19): an M rather than the other, 3-port L."""
    s = decide_mode(R24[agent], JOBS[job], [r for r in R24.values() if r.robot_id != agent], 2)
    assert s.mode == WorkingMode.ASSEMBLY and s.team is not None and s.team.ids == team
    assert s.scores == pytest.approx(
        {"+".join(team): 1000 / (1 + 10**0.5), with_two_ls: 1000 / (1 + 10**0.5)}
    )
    assert s.scores[with_two_ls] == s.scores["+".join(team)]  # the tie eq. 20 leaves


def test_method2_substitute_tie_goes_to_the_robot_with_fewer_ports():
    """O3 (a gripper only) cannot do job 2 and has no port to spare: it subcontracts.
    L1 and M1 both have q̂ = [1, 2, 1] (θ̂ 500); M1, with 2 ports to L1's 3, takes it."""
    s = decide_mode(R["o3"], JOBS["job2"], [R["l1"], R["m1"]], 2)
    assert s.mode == WorkingMode.SUBCONTRACT and s.helpers == ("m1",)
    assert s.scores == pytest.approx({"l1": 500.0, "m1": 500.0})


def test_job5_l_assembles_with_m_and_o1():
    """§VII.E, Fig. 18(b): L + M1 + O1; O1's type-3 eye, M1's gripper, L's wheels."""
    s = decide_mode(R["l1"], JOBS["job5"], others("l1"), 2)
    assert s.mode == WorkingMode.ASSEMBLY and s.team is not None
    assert s.team.ids == ("l1", "m1", "o1")
    cg = ControlGraph.for_team(s.team, JOBS["job5"])
    assert cg.route("o1/P0", "grasp").robot == "m1"
    assert cg.route("o1/P0", "move").robot == "l1"
