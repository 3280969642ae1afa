"""Seed 001 §V.3: the kitting allocation on time alone at two human walking speeds
(``planners.allocation.offline``) and ``teamtree study kitting-offline``."""

from __future__ import annotations

import asyncio
import csv
import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.broker import SpecificationError
from teamtree.planners.allocation import (
    DEFAULT_PATTERN,
    HUMAN,
    PAPER_OFFLINE,
    ROBOT,
    Colour,
    ColourTimes,
    colour_summary,
    offline_allocation,
    random_pattern,
)
from tests.conftest import study_cli

G, P, OR, B = Colour.GREEN, Colour.PINK, Colour.ORANGE, Colour.BLUE


def test_colour_times_come_from_the_simulation_workspaces_near_and_far() -> None:
    t = ColourTimes.from_workspaces()
    assert t.human == pytest.approx(((5.567 + 7.547) / 2, (13.515 + 13.552) / 2))
    assert t.robot == pytest.approx(((11.982 + 9.479) / 2, (20.087 + 20.044) / 2))
    # §IV.A's text: green near both, pink near the robot, orange near the human
    assert t.human_time(G, 1.2) == t.human_time(OR, 1.2) == pytest.approx(t.human[0])
    assert t.human_time(P, 1.2) == t.human_time(B, 1.2) == pytest.approx(t.human[1])
    assert t.robot_time(G) == t.robot_time(P) == pytest.approx(t.robot[0])
    assert t.robot_time(OR) == t.robot_time(B) == pytest.approx(t.robot[1])


def test_a_slower_human_walks_longer_but_handles_as_fast() -> None:
    t = ColourTimes((6.0, 12.0), (10.0, 20.0), handling=2.0)
    assert t.human_time(G, 1.2) == pytest.approx(6.0)
    assert t.human_time(G, 0.7) == pytest.approx(2.0 + 4.0 * 1.2 / 0.7)
    assert t.scaled_robot(3).robot == (30.0, 60.0)
    assert t.scaled_robot(3).human == t.human
    with pytest.raises(SpecificationError, match="speed"):
        t.human_time(G, 0.0)
    with pytest.raises(SpecificationError, match="robot factor"):
        t.scaled_robot(0)


def test_a_pattern_must_fill_whole_workspaces() -> None:
    with pytest.raises(SpecificationError, match="whole workspaces of 5"):
        offline_allocation(ColourTimes.from_workspaces(), 1.2, DEFAULT_PATTERN[:7])


def _brute_max_load(h: list[float], r: list[float]) -> float:
    best = float("inf")
    for who in itertools.product((HUMAN, ROBOT), repeat=len(h)):
        human = sum(x for x, a in zip(h, who, strict=True) if a == HUMAN)
        robot = sum(x for x, a in zip(r, who, strict=True) if a == ROBOT)
        best = min(best, max(human, robot))
    return best


@settings(max_examples=25, deadline=None)
@given(
    pattern=st.lists(st.sampled_from(list(Colour)), min_size=6, max_size=6),
    near_h=st.floats(2, 10),
    far_h=st.floats(10, 20),
    near_r=st.floats(3, 30),
    far_r=st.floats(10, 60),
    speed=st.sampled_from([0.7, 1.0, 1.2]),
)
def test_the_plan_balances_load_as_well_as_any_allocation(
    pattern, near_h, far_h, near_r, far_r, speed
) -> None:
    """Against every one of the 64 allocations of two workspaces of three spots."""
    times = ColourTimes((near_h, far_h), (near_r, far_r))
    plan = offline_allocation(times, speed, pattern, spots=3)
    h = [times.human_time(c, speed) for c in pattern]
    r = [times.robot_time(c) for c in pattern]
    loads = {
        a: sum((h if a == HUMAN else r)[i] for i, x in enumerate(plan.agents) if x == a)
        for a in (HUMAN, ROBOT)
    }
    assert max(loads.values()) == pytest.approx(_brute_max_load(h, r), rel=1e-6, abs=1e-6)
    assert plan.work == pytest.approx(sum(loads.values()))
    # the schedule cannot beat the busier agent nor the longest workspace chain
    assert plan.makespan >= max(loads.values()) - 1e-6
    robot_colours = [c for c, a in zip(pattern, plan.agents, strict=True) if a == ROBOT]
    assert sum(plan.robot_colours.values()) == len(robot_colours)


def test_the_paper_answer_appears_with_a_robot_three_times_the_simulation_times() -> None:
    """§V.3 at 1.2 and 0.7 m/s on the default pattern and two random ones; with the
    simulation's own robot times the robot gets more than the paper's."""
    base = ColourTimes.from_workspaces()
    for pattern in (DEFAULT_PATTERN, random_pattern(1), random_pattern(2)):
        for speed, paper in PAPER_OFFLINE.items():
            plan = offline_allocation(base.scaled_robot(3.0), speed, pattern)
            assert dict(plan.robot_colours) == dict(paper), (speed, plan.robot_summary())
        fast = offline_allocation(base, 1.2, pattern)
        assert sum(fast.robot_colours.values()) > 4


def test_random_patterns_hold_five_of_each_colour_and_replay() -> None:
    p = random_pattern(7)
    assert sorted(p, key=lambda c: c.value) == sorted(DEFAULT_PATTERN, key=lambda c: c.value)
    assert p == random_pattern(7) and p != random_pattern(8)
    assert colour_summary({P: 5, G: 1}) == "5 pink + 1 green"
    assert colour_summary({}) == "none"


def test_study_kitting_offline_prints_the_table_and_writes_the_csv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser, handlers = study_cli()
    out = tmp_path / "offline"
    args = parser.parse_args(
        ["study", "kitting-offline", "--robot-factor", "1,3", "--patterns", "2",
         "--out", str(out)]
    )  # fmt: skip
    assert asyncio.run(handlers[args.command](args)) == 0
    captured = capsys.readouterr()
    assert "= 4 pink" in captured.out and "= 5 pink + 1 green" in captured.out
    assert "the paper's answer at both speeds: robot x 3" in captured.out
    assert "8/8" in captured.err
    rows = list(csv.DictReader((out / "offline.csv").open()))
    assert len(rows) == 8
    matched = {(r["robot_factor"], r["speed"]) for r in rows if r["matches_paper"] == "True"}
    assert matched == {("3.0", "1.2"), ("3.0", "0.7")}


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (["--robot-factor", "0"], "positive number"),
        (["--speeds", "fast"], "comma-separated"),
        (["--patterns", "0"], "whole number"),
        (["--handling", "-1"], "0 or more"),
    ],
)
def test_study_kitting_offline_refuses_bad_flags(bad: list[str], says: str, capsys) -> None:
    parser, _ = study_cli()
    with pytest.raises(SystemExit):
        parser.parse_args(["study", "kitting-offline", *bad])
    assert says in capsys.readouterr().err
