"""The mission queue's schedule and submission checks, without a broker.

Random submit/end sequences check that no member and no object is ever in two running
missions, that every mission eventually starts, and that a mission starts as soon as
what it needs is free and nothing earlier waits for it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.missions import (
    MissionQueue,
    Need,
    SubmissionError,
    check_submission,
    conflicts,
    mission_config,
    next_starts,
)
from teamtree.agents.runtime.config import load_config
from teamtree.agents.runtime.kinds import agent_class

REPO = Path(__file__).resolve().parent.parent
MEMBERS = ["a", "b", "c", "d"]
OBJECTS = ["cup", "pot", "bun"]


@st.composite
def needs(draw: st.DrawFn) -> Need:
    eligible = frozenset(draw(st.sets(st.sampled_from(MEMBERS), min_size=1)))
    count = draw(st.one_of(st.none(), st.integers(1, len(eligible))))
    objects = frozenset(draw(st.sets(st.sampled_from(OBJECTS), max_size=2)))
    return Need(eligible, count, objects)


@settings(max_examples=200, deadline=None)
@given(
    missions=st.lists(needs(), min_size=1, max_size=8),
    ends=st.lists(st.integers(0, 7), max_size=30),
)
def test_no_member_or_object_is_in_two_missions_and_all_start(
    missions: list[Need], ends: list[int]
) -> None:
    queued = [(f"m{i}", need) for i, need in enumerate(missions)]
    running: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
    started: list[str] = []

    def step() -> None:
        busy_m = {m for members, _ in running.values() for m in members}
        busy_o = {o for _, objects in running.values() for o in objects}
        for mission, got in next_starts(queued, busy_m, busy_o):
            need = dict(queued)[mission]
            assert got <= need.eligible and len(got) == need.wanted(), (mission, got, need)
            queued.remove((mission, need))
            running[mission] = (got, need.objects)
            started.append(mission)
        assert conflicts(running) == [], running

    step()
    for pick in [*ends, *range(len(missions) * 2)]:  # random ends, then drain
        if not running:
            break
        del running[sorted(running)[pick % len(running)]]
        step()
    while running:
        del running[sorted(running)[0]]
        step()
    assert queued == [] and sorted(started) == sorted(f"m{i}" for i in range(len(missions)))
    assert started[0] == "m0", "the first mission starts first on an idle team"


def test_a_later_small_mission_does_not_take_what_an_earlier_one_waits_for() -> None:
    all_ab = Need(frozenset("ab"))
    one = Need(frozenset("ab"), 1)
    # b is busy: the all-members mission waits and holds a, so the small one waits too
    assert next_starts([("big", all_ab), ("small", one)], {"b"}, set()) == []
    # a mission on other members and objects starts past it (backfilling)
    other = Need(frozenset("c"), objects=frozenset({"cup"}))
    assert next_starts([("big", all_ab), ("c", other)], {"b"}, set()) == [("c", frozenset("c"))]
    # two missions moving the cup never run at once, even on different robots
    cup_a = Need(frozenset("a"), objects=frozenset({"cup"}))
    cup_c = Need(frozenset("c"), objects=frozenset({"cup"}))
    assert next_starts([("x", cup_a), ("y", cup_c)], set(), set()) == [("x", frozenset("a"))]


def test_conflicts_name_the_member_and_both_missions() -> None:
    clash = conflicts({"x": (frozenset("a"), frozenset()), "y": (frozenset("a"), frozenset())})
    assert clash == ["member a in x and y"]


QUEUE_CONFIG = REPO / "configs" / "tea_party_queue.toml"


def _queue_checks() -> tuple[dict, object]:
    config = load_config(QUEUE_CONFIG)
    params = MissionQueue.params_from_config(config.agent("queue"), config)

    def check(member: str, spec: object, team: frozenset[str]) -> None:
        cfg = mission_config(config, spec, team)
        entry = cfg.agent(member)
        agent_class(entry, cfg).params_from_config(entry, cfg)

    return params, check


@pytest.mark.parametrize(
    ("mission", "field"),
    [
        ({"kind": "ltl", "formula": "F a"}, "mission.kind"),
        ({"kind": "tasktree"}, "mission.tree"),
        ({"kind": "tasktree", "tree": "THEN(cup, spoon)"}, "mission.tree"),
        ({"kind": "tasktree", "tree": "THEN(cup,"}, "mission.tree"),
        ({"kind": "tasktree", "tree": "cup", "members": ["r2d2"]}, "mission.members"),
        ({"kind": "tasktree", "tree": "cup", "members": 3}, "mission.members"),
        ({"kind": "tasktree", "tree": "cup", "members": "pr2"}, "mission.members"),
        ({"kind": "tasktree", "tree": "cup", "trees": "cup"}, "mission.trees"),
        ({"kind": "tasktree", "tree": "cup", "timeout_s": -1}, "mission.timeout_s"),
    ],
)
def test_a_bad_submission_names_its_field(mission: dict, field: str) -> None:
    params, check = _queue_checks()
    with pytest.raises(SubmissionError) as err:
        check_submission({"mission": mission}, set(params["objects"]), params["served"], check)
    assert err.value.field == field, str(err.value)
    assert f"[{field}]" in str(err.value)


def test_members_pick_who_works_a_mission_and_become_its_roster() -> None:
    params, check = _queue_checks()
    assert params["served"] == {"pr2": ["tasktree"], "baxter": ["tasktree"]}
    body = {"mission": {"kind": "tasktree", "tree": "THEN(cup, sugar)", "members": ["pr2"]}}
    spec, need = check_submission(body, set(params["objects"]), params["served"], check)
    assert need == Need(frozenset({"pr2"}), None, frozenset({"cup", "sugar"}))
    config = mission_config(load_config(QUEUE_CONFIG), spec, need.eligible)
    entry = config.agent("pr2")
    robot = agent_class(entry, config).params_from_config(entry, config)
    assert robot["roster"] == ["pr2"] and robot["expect_peers"] == ["pr2"]
    both = mission_config(load_config(QUEUE_CONFIG), spec, {"pr2", "baxter"})
    entry = both.agent("baxter")
    robot = agent_class(entry, both).params_from_config(entry, both)
    assert robot["roster"] == ["baxter", "pr2"], "robots of one mission must hear each other"


def test_every_kind_that_serves_missions_is_installed() -> None:
    from teamtree.agents.missions import SERVES
    from teamtree.agents.runtime.kinds import AGENT_KINDS

    missing = [kind for kind in SERVES if AGENT_KINDS.get(kind) is None]
    assert missing == [], f"SERVES names kinds that are not installed: {missing}"


def test_a_hospital_queue_checks_ltl_missions_as_its_planner_reads_them() -> None:
    config = load_config(REPO / "configs" / "hospital_queue.toml")
    params = MissionQueue.params_from_config(config.agent("queue"), config)
    assert params["served"] == {"planner": ["ltl"], "DR": ["ltl"], "A1": ["ltl"]}

    def check(member: str, spec: object, team: frozenset[str]) -> None:
        cfg = mission_config(config, spec, team)
        entry = cfg.agent(member)
        agent_class(entry, cfg).params_from_config(entry, cfg)

    ok = {"mission": {"kind": "ltl", "scenario": "study1"}}
    _, need = check_submission(ok, None, params["served"], check)
    assert need.eligible == {"planner", "DR", "A1"} and need.count is None
    for mission, field in [
        ({"kind": "ltl", "scenario": "study9"}, "mission.scenario"),
        ({"kind": "ltl", "formula": "<> (p3"}, "mission.formula"),
        ({"kind": "ltl", "scenario": "study1", "members": ["DR"]}, "mission.members"),
        ({"kind": "kitting"}, "mission.kind"),
    ]:
        with pytest.raises(SubmissionError) as err:
            check_submission({"mission": mission}, None, params["served"], check)
        assert err.value.field == field, str(err.value)


@pytest.mark.parametrize(
    ("name", "kinds", "key", "field"),
    [
        ("kitting", {"cobot", "kitting_human"}, "time_factor", "mission.time_factor"),
        ("factory_8", {"job_source", "factory_robot"}, "method", "mission.method"),
    ],
)
def test_kitting_and_factory_missions_are_checked_by_the_members_that_serve_them(
    name: str, kinds: set[str], key: str, field: str
) -> None:
    """The config's own [mission] is accepted by a queue over its members made on_call;
    a wrong value of one of its keys is refused naming that key."""
    import tomllib

    from teamtree.agents.runtime.config import parse_config

    data = tomllib.loads((REPO / "configs" / f"{name}.toml").read_text())
    mission, data["mission"] = data["mission"], {"kind": "none"}
    for entry in data["agents"]:
        if entry["kind"] in kinds:
            entry["role"] = "on_call"
    data["agents"].append({"id": "queue", "kind": "mission_queue", "role": "service"})
    config = parse_config(data, REPO / "configs" / f"{name}_queue.toml")
    params = MissionQueue.params_from_config(config.agent("queue"), config)

    def check(member: str, spec: object, team: frozenset[str]) -> None:
        cfg = mission_config(config, spec, team)
        entry = cfg.agent(member)
        agent_class(entry, cfg).params_from_config(entry, cfg)

    _, need = check_submission({"mission": mission}, None, params["served"], check)
    assert {config.agent(m).kind for m in need.eligible} == kinds
    with pytest.raises(SubmissionError) as err:
        check_submission({"mission": {**mission, key: "zzz"}}, None, params["served"], check)
    assert err.value.field == field, str(err.value)
