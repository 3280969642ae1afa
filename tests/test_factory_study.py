"""Seed 002's working-mode study (§VII.C, Figs. 16 and 17): the job timing, the
mode-conditioned member selection, the study's ordering against the paper's
statements, its seeding, and ``teamtree study factory``."""

from __future__ import annotations

import asyncio
import csv
import statistics
from pathlib import Path

import pytest

from teamtree.broker import InfeasibleError
from teamtree.hardware import factory_robots, find_tower, make_robot
from teamtree.planners.capability import (
    JOBS,
    FloorModel,
    ModeSummary,
    Selection,
    WorkingMode,
    feasible_agents,
    job_time,
    reach_rows,
    run_mode,
    select_in_mode,
    study_runs,
)
from tests.conftest import study_cli

ROBOTS = factory_robots()
BY_ID = {r.robot_id: r for r in ROBOTS}

# -- the job's time ----------------------------------------------------------------------


def test_solo_time_is_the_walk_then_one_robot_carrying_every_box() -> None:
    model = FloorModel(boxes=2)
    sel = Selection(WorkingMode.SOLO, "m1")
    t = job_time(sel, BY_ID, {"m1": model.table}, model)
    # M: lv-2 locomotion, 0.5 m/s; table to place 10 m: 20 s a leg, 3 s to grasp and release
    assert (t.decision_s, t.gather_s, t.to_table_s) == (0.0, 0.0, 0.0)
    assert t.total_s == pytest.approx(26 + 20 + 26)
    assert t.efficiency == pytest.approx(60 * 2 / 72)


def test_partnership_shares_the_boxes_after_deciding() -> None:
    model = FloorModel(boxes=2)
    sel = Selection(WorkingMode.PARTNERSHIP, "m1", ("m2",))
    t = job_time(sel, BY_ID, {"m1": model.table, "m2": model.table}, model)
    assert t.total_s == pytest.approx(model.decision_s + 26)


def test_subcontract_runs_on_the_helpers_legs_and_assembly_gathers_first() -> None:
    model = FloorModel(boxes=1)
    far = (model.table[0], model.table[1] + 5.0)
    sub = job_time(Selection(WorkingMode.SUBCONTRACT, "m1", ("s2",)), BY_ID,
                   {"m1": model.table, "s2": far}, model)  # fmt: skip
    # S2 moves at lv 1, 0.25 m/s: 20 s to the table, 40 s a leg
    assert sub.to_table_s == pytest.approx(20.0)
    assert sub.total_s == pytest.approx(model.decision_s + 20 + 3 + 40 + 3)
    tower = find_tower([BY_ID["m1"], BY_ID["o2"]], lambda team: True)
    assert tower is not None and tower.ground.robot_id == "m1"
    sel = Selection(WorkingMode.ASSEMBLY, "m1", ("o2",), team=tower)
    asm = job_time(sel, BY_ID, {"m1": model.table, "o2": far}, model)
    # the M drives 5 m to the O2 (10 s), docks it (10 s) and comes back (10 s)
    assert asm.gather_s == pytest.approx(10 + model.dock_s)
    assert asm.total_s == pytest.approx(model.decision_s + 20 + 10 + 3 + 20 + 3)


def test_a_robot_without_locomotion_cannot_work_alone() -> None:
    model = FloorModel()
    with pytest.raises(ValueError, match="cannot move"):
        job_time(Selection(WorkingMode.SOLO, "o1"), BY_ID, {"o1": (0.0, 0.0)}, model)


@pytest.mark.parametrize(
    "bad", [{"boxes": 0}, {"comm_range_m": 0.0}, {"speed_per_level": -1.0}, {"width_m": 0.0}]
)
def test_floor_model_refuses_nonsense(bad: dict) -> None:
    with pytest.raises(ValueError):
        FloorModel(**bad)


# -- selection in a given mode -----------------------------------------------------------


def test_modes_that_cannot_do_a_job_are_infeasible() -> None:
    def agents(job: str, mode: WorkingMode) -> tuple[str, ...]:
        return feasible_agents(JOBS[job], mode, ROBOTS)

    # Job 1: only by assembly, and only an assemblable agent that can carry O1's camera
    for mode in (WorkingMode.SOLO, WorkingMode.PARTNERSHIP, WorkingMode.SUBCONTRACT):
        assert agents("job1", mode) == ()
    assert agents("job1", WorkingMode.ASSEMBLY) == ("l1", "m1", "m2", "m3")
    assert all(BY_ID[a].assemblable for a in agents("job1", WorkingMode.ASSEMBLY))
    assert "b1" not in agents("job1", WorkingMode.ASSEMBLY)  # no ports: cannot complete it
    # Job 4: one S2, the only robot with the type-2 gripper: solo, never a partnership
    assert agents("job4", WorkingMode.SOLO) == ("s2",)
    assert agents("job4", WorkingMode.PARTNERSHIP) == ()
    # Job 2 needs no enhancement under method 1; job 3(a) allows every mode
    assert agents("job2", WorkingMode.ASSEMBLY) == ()
    assert all(agents("job3a", m) for m in WorkingMode)


def test_select_in_mode_keeps_the_grants_the_condition_allows() -> None:
    job = JOBS["job3a"]
    m1 = BY_ID["m1"]
    sub = select_in_mode(m1, job, ROBOTS, WorkingMode.SUBCONTRACT)
    assert sub is not None and sub.mode == WorkingMode.SUBCONTRACT
    assert BY_ID[sub.helpers[0]].kind in ("B", "L")  # the robots tall enough alone
    asm = select_in_mode(m1, job, ROBOTS, WorkingMode.ASSEMBLY)
    assert asm is not None and asm.team is not None and asm.team.height >= 4
    assert select_in_mode(m1, job, ROBOTS, WorkingMode.SOLO) is None  # 3 units, too short
    alone = select_in_mode(BY_ID["b1"], job, [], WorkingMode.PARTNERSHIP)
    assert alone is None  # nobody to partner with
    assert select_in_mode(make_robot("B", "b9"), job, [], WorkingMode.SOLO) is not None


# -- the study ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def study() -> tuple[list, list[ModeSummary]]:
    return study_runs(runs=10, seed=0)


def _mean(rows: list[ModeSummary], job: str, mode: str) -> float:
    (row,) = [r for r in rows if (r.job, r.mode) == (job, mode)]
    assert row.mean is not None
    return row.mean


def test_the_paper_s_ordering_of_the_modes(study) -> None:
    _, rows = study
    # Job 2: partnership most efficient, solo second, subcontract slowest (§VII.C)
    assert _mean(rows, "job2", "partnership") > _mean(rows, "job2", "solo")
    assert _mean(rows, "job2", "solo") > _mean(rows, "job2", "subcontract")
    # Job 3: partnership most efficient, assembly the most time-consuming
    job3 = {m.value: _mean(rows, "job3a", m.value) for m in WorkingMode}
    assert max(job3, key=job3.__getitem__) == "partnership"
    assert min(job3, key=job3.__getitem__) == "assembly"
    # Job 4: solo and subcontract overlap (both the S2's slow legs); the documented
    # deviation: assembly rides an lv-2 base and is faster, not similar
    (solo,) = [r for r in rows if (r.job, r.mode) == ("job4", "solo")]
    (sub,) = [r for r in rows if (r.job, r.mode) == ("job4", "subcontract")]
    assert solo.low is not None and sub.high is not None and solo.low <= sub.high
    assert _mean(rows, "job4", "assembly") > _mean(rows, "job4", "solo")


def test_summary_figures_come_from_the_runs(study) -> None:
    runs, rows = study
    for row in rows:
        mine = [r.efficiency for r in runs if (r.job, r.mode) == (row.job, row.mode)]
        if not row.feasible:
            assert mine == [] and row.mean is None and row.runs == 0
            continue
        assert row.runs == 10 and len(mine) == 10
        assert (row.low, row.high) == (min(mine), max(mine))
        assert row.mean == pytest.approx(statistics.fmean(mine), abs=1e-4)
        for r in (r for r in runs if (r.job, r.mode) == (row.job, row.mode)):
            assert r.agent in row.agents.split()


def test_runs_are_seeded_and_independent_of_what_else_runs(study) -> None:
    runs, _ = study
    again = run_mode("job3a", WorkingMode.ASSEMBLY, 4, 0)
    assert again in runs
    assert run_mode("job3a", WorkingMode.ASSEMBLY, 4, 0) == again
    other = run_mode("job3a", WorkingMode.ASSEMBLY, 4, 1)
    assert other.total_s != again.total_s


def test_too_short_a_range_for_any_partner_is_reported() -> None:
    with pytest.raises(InfeasibleError, match=r"no team within 0\.01 m"):
        run_mode("job3a", WorkingMode.PARTNERSHIP, 0, 0, FloorModel(comm_range_m=0.01))


def test_unknown_jobs_are_refused() -> None:
    with pytest.raises(ValueError, match="job9"):
        study_runs(jobs=("job9",), runs=1)


def test_fig17_jobs_without_assembly_are_out_of_reach() -> None:
    rows = {r.job: r for r in reach_rows()}
    # the box on the 8-unit table (Fig. 17): no robot alone, ours by assembly
    assert rows["job3b"].state_of_the_art == 0
    assert rows["job3b"].method_1 > 0 and rows["job3b"].method_2 > 0
    assert rows["job1"].state_of_the_art == 0 and rows["job1"].method_1 == 4
    # three-robot towers: method 2 only
    for job in ("job3c", "job5"):
        assert rows[job].state_of_the_art == 0 and rows[job].method_1 == 0
        assert rows[job].method_2 > 0 and "method 2" in rows[job].example
    for job in ("job2", "job3a", "job4"):
        assert rows[job].state_of_the_art == 12 and rows[job].example == ""


# -- the CLI -----------------------------------------------------------------------------


def test_study_factory_prints_the_tables_and_writes_the_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser, handlers = study_cli()
    out = tmp_path / "factory"
    args = parser.parse_args(
        ["study", "factory", "--runs", "2", "--jobs", "job1,job4", "--seed", "3",
         "--out", str(out)]
    )  # fmt: skip
    assert asyncio.run(handlers[args.command](args)) == 0
    captured = capsys.readouterr()
    printed = captured.out
    assert "Fig. 16" in printed and "Fig. 17" in printed
    assert "job1   solo" in printed and "infeasible" in printed
    assert "8/8" in captured.err  # 2 runs of job1 assembly and job4 solo/subcontract/assembly
    summary = list(csv.DictReader((out / "summary.csv").open()))
    assert [(r["job"], r["mode"], r["feasible"]) for r in summary][:4] == [
        ("job1", "solo", "False"),
        ("job1", "partnership", "False"),
        ("job1", "subcontract", "False"),
        ("job1", "assembly", "True"),
    ]
    runs = list(csv.DictReader((out / "runs.csv").open()))
    assert len(runs) == 8 and {r["seed"] for r in runs} == {"3"}
    reach = list(csv.DictReader((out / "reach.csv").open()))
    assert [r["job"] for r in reach][:2] == ["job1", "job2"]
    assert (out / "efficiency.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (["--runs", "0"], "whole number"),
        (["--seed", "x"], "whole number"),
        (["--boxes", "0"], "whole number"),
        (["--jobs", "job1,job9"], "use job names from"),
        (["--comm-range", "0"], "must be positive"),
        (["--comm-range", "far"], "not a number of metres"),
    ],
)
def test_study_factory_refuses_bad_flags(bad: list[str], says: str, capsys) -> None:
    parser, _ = study_cli()
    with pytest.raises(SystemExit):
        parser.parse_args(["study", "factory", *bad])
    assert says in capsys.readouterr().err


def test_study_factory_says_when_the_range_leaves_no_team(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser, handlers = study_cli()
    args = parser.parse_args(
        ["study", "factory", "--runs", "1", "--jobs", "job3a", "--comm-range", "0.01",
         "--no-progress", "--out", str(tmp_path)]
    )  # fmt: skip
    assert asyncio.run(handlers[args.command](args)) == 1
    assert "no team within 0.01 m" in capsys.readouterr().out
