"""The assemble search (seed 002 §V.C, eq. 19) finds the fewest layers: brute force check."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.broker import NoCapableAgentError
from teamtree.hardware import Component, Domain, RobotProfile, find_tower, make_robot
from teamtree.planners.capability import (
    JOBS,
    JobSpec,
    Offer,
    assemble_search,
    available_ports,
    make_matcher,
    verify_type,
)
from teamtree.planners.capability.modes import _may_cover


def test_eq19_examples():
    assert available_ports([3, 2, 1]) == 1  # L + M + S1, Fig. 15
    assert available_ports([1]) == 0  # S2 alone: no port to spare (§VII.F.2)
    assert available_ports([2, 1]) == 0


def test_agent_with_one_port_cannot_start():
    job = JobSpec("j", (Component(Domain.PERCEPTION, 3, 3),))
    res = assemble_search(
        make_robot("S2", "s2"),
        [make_robot("O1", "o1")],
        lambda t: verify_type(job.types(), t.type_capability()).capable,
    )
    assert res.solutions == () and res.size is None


robot_st = st.builds(
    lambda kind, idx: make_robot(kind, f"{kind.lower()}x{idx}"),
    st.sampled_from(["B", "L", "M", "S1", "S2", "O1", "O2", "O3", "O4"]),
    st.integers(0, 10**6),
)


@st.composite
def scenario(draw):
    agent_kind = draw(st.sampled_from(["L", "M", "M", "S1", "O4"]))
    agent = make_robot(agent_kind, "agent")
    kinds = draw(
        st.lists(
            st.sampled_from(["B", "L", "M", "S1", "S2", "O1", "O2", "O3", "O4"]),
            min_size=1,
            max_size=6,
        )
    )
    nbs = [make_robot(k, f"n{i}") for i, k in enumerate(kinds)]
    height = draw(st.integers(1, 12))
    perception = draw(st.sampled_from([((1, 1),), ((3, 3),), ((2, 2),), ((1, 1), (3, 3))]))
    manip = draw(st.sampled_from([(1, 1), (2, 2)]))
    demands = [Component(Domain.PERCEPTION, lv, ty) for lv, ty in perception]
    demands.append(Component(Domain.MANIPULATION, manip[0], manip[1], (1, height, 1)))
    demands.append(Component(Domain.LOCOMOTION, 1, 1))
    return agent, nbs, JobSpec("rand", tuple(demands))


def brute_force_min_size(agent: RobotProfile, nbs, accept) -> int | None:
    if available_ports([agent.ports]) < 1:
        return None
    for k in range(1, len(nbs) + 1):
        for combo in itertools.combinations(nbs, k):
            members = [agent, *combo]
            if available_ports([m.ports for m in members]) < 0:
                continue
            if find_tower(members, accept) is not None:
                return k + 1
    return None


@settings(max_examples=150, deadline=None)
@given(scenario())
def test_search_finds_fewest_layers(case):
    agent, nbs, job = case
    t_job = job.types()

    def accept(team):
        return verify_type(t_job, team.type_capability()).capable

    res = assemble_search(agent, nbs, accept)
    expected = brute_force_min_size(agent, nbs, accept)
    assert res.size == expected
    for team in res.solutions:
        assert len(team.members) == expected
        assert team.is_feasible() and accept(team)
        assert "agent" in team.ids
        assert available_ports([m.ports for m in team.members]) >= 0


@settings(max_examples=150, deadline=None)
@given(scenario())
def test_the_necessary_condition_changes_no_solution(case):
    """``may_accept`` (the members together hold the job's types and quantities) only
    skips sets no tower of which could pass: the same solutions as the full search."""
    agent, nbs, job = case
    t_job = job.types()

    def accept(team):
        return verify_type(t_job, team.type_capability()).capable

    full = assemble_search(agent, nbs, accept)
    pruned = assemble_search(agent, nbs, accept, may_accept=_may_cover(t_job))
    assert [t.ids for t in pruned.solutions] == [t.ids for t in full.solutions]
    assert pruned.size == full.size and pruned.checked <= full.checked


def test_a_job_whose_type_nobody_holds_tries_no_tower():
    """Job 1 needs the heat camera only an O1 has: with the O1 busy and twelve other
    robots granting, no tower is tried (the full search tried every order of every set,
    minutes at twelve neighbours)."""
    kinds = ["B", "B", "L", "L", "M", "M", "M", "M", "M", "O2", "O4", "S2"]
    nbs = [make_robot(k, f"n{i}") for i, k in enumerate(kinds)]
    t_job = JOBS["job1"].types()
    res = assemble_search(
        make_robot("M", "m1"),
        nbs,
        lambda t: verify_type(t_job, t.type_capability()).capable,
        may_accept=_may_cover(t_job),
    )
    assert res.solutions == () and res.checked == 0
    with pytest.raises(NoCapableAgentError):
        make_matcher(2).select(make_robot("M", "m1"), JOBS["job1"], [Offer(n) for n in nbs])
