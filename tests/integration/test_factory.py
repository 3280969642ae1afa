"""Seed 002 over the broker: the robot factory's favor protocol, with mosquitto.

Jobs 1-5 run as separate robot processes (``teamtree run configs/factory_8.toml``)
and must end in the modes the paper reports; member selection must survive injected
message loss, a SIGKILLed helper and a helper whose battery runs low. Every test is
judged from what the job source summarised from the broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import subprocess
from pathlib import Path

import pytest

from teamtree.agents import Agent, RuntimeSettings, build_agent, load_config
from teamtree.agents.capability.factory import FactoryRobot, JobOrder, JobSource
from teamtree.agents.runtime.kinds import apply_overrides
from teamtree.broker import find_mosquitto
from tests.conftest import REPO, AgentProcs, eventually, scaled, teamtree_cmd, write_config

pytestmark = pytest.mark.integration

FACTORY_8 = REPO / "configs" / "factory_8.toml"


def run_factory(config: Path, summary: str, tmp_path: Path, *settings: str) -> tuple[dict, str]:
    """``teamtree run CONFIG`` on its own mosquitto, in ``tmp_path``; (summary, stdout)."""
    if find_mosquitto() is None:
        pytest.skip("mosquitto is not installed")
    sets = [a for s in settings for a in ("--set", s)]
    out = subprocess.run(
        teamtree_cmd("run", str(config), "--broker-kind", "mosquitto", *sets),
        capture_output=True, text=True, timeout=150, cwd=tmp_path,
    )  # fmt: skip
    doc = json.loads((tmp_path / summary).read_text())
    # honest outcome: exit 0 exactly when every job is done, else 1 with the reason
    all_done = all(j["status"] == "done" for j in doc["jobs"])
    assert out.returncode == (0 if all_done else 1), out.stdout[-5000:] + out.stderr[-2000:]
    if not all_done:
        assert "Mission FAILED" in out.stdout and "jobs done; not done:" in out.stdout
    return doc, out.stdout


MODES_WINDOW_S = 0.5
"""Grant deadline for the tests that assert who is selected. The window closes once
every capable robot has granted or declined; a grant that misses the deadline counts as
a rejection (§IV.D), so the deadline must exceed the slowest answer under load (grants
took 7-95 ms on two cores under a load of 13)."""


def run_factory_8(tmp_path: Path, *settings: str) -> tuple[dict, str]:
    """``teamtree run configs/factory_8.toml`` on mosquitto; (summary, stdout)."""
    return run_factory(FACTORY_8, "runs/factory_8_summary.json", tmp_path, *settings)


def by_id(summary: dict) -> dict[str, dict]:
    return {j["job_id"]: j for j in summary["jobs"]}


@pytest.mark.parametrize("method", [1, 2])
def test_jobs_1_to_5_end_in_the_papers_modes(method: int, tmp_path: Path) -> None:
    summary, stdout = run_factory_8(tmp_path, f"method={method}", f"window_s={MODES_WINDOW_S}")
    jobs = by_id(summary)
    # §VII.B/E, Fig. 12(a), 18(c): job 1 only by assembly, M1 with O1's heat camera
    assert jobs["j1"]["mode"] == "assembly" and sorted(jobs["j1"]["tower"]) == ["m1", "o1"]
    # §VII.F: S2 shares job 2 with S1 (method 1) / subcontracts it to S1 (method 2)
    expected = "partnership" if method == 1 else "subcontract"
    assert (jobs["j2"]["mode"], jobs["j2"]["helpers"]) == (expected, ["s1"])
    # job 3(a), Fig. 15's neighbours L1, S1, O1 idle around M3. §VII.B.1, Fig. 12(c)
    # (passive method): M3 reaches 4 units with S1. The paper gives no 3(a) result for
    # method 2; eq. 20 ranks the substitute L1 (q̂ [1,2,1], θ̂ 500) above the tower
    # M3+S1 (q̂ [2,3,1], θ̂ 309), so M3 subcontracts to L1 while L1 is an idle neighbour;
    # without it both methods assemble M3+S1 (the next test; docs/favors.md, "Job 3(a)")
    if method == 1:
        assert jobs["j3"]["mode"] == "assembly" and jobs["j3"]["tower"] == ["m3", "s1"]
    else:
        assert (jobs["j3"]["mode"], jobs["j3"]["helpers"]) == ("subcontract", ["l1"])
    # §VII.E, Fig. 18: job 3(b), L assembles with an M and uses its gripper
    j4 = jobs["j4"]
    assert j4["mode"] == "assembly" and j4["tower"][0] == "l1" and j4["height"] == 8
    assert j4["helpers"][0] in ("m1", "m3") and j4["grasp_by"] == j4["helpers"][0]
    assert j4["move_by"] == "l1"
    # job 3(c): the three-robot tower L1 + M3 + S1 (Fig. 15); method 1 finds one helper
    if method == 2:
        assert jobs["j5"]["mode"] == "assembly" and jobs["j5"]["tower"] == ["l1", "m3", "s1"]
    else:
        assert jobs["j5"]["status"] == "impossible"  # eq. 18: one helper under method 1
    # job 4: S2 works solo; non-assemblable B1 subcontracts to S2 (Fig. 12(d))
    assert jobs["j6"]["mode"] == "solo" and jobs["j6"]["members"] == ["s2"]
    assert (jobs["j7"]["mode"], jobs["j7"]["helpers"]) == ("subcontract", ["s2"])
    # job 5, Fig. 18(b): L + M + O1; O1's eye, the M's gripper, L's wheels (method 2)
    if method == 2:
        j8 = jobs["j8"]
        assert j8["mode"] == "assembly" and j8["tower"][0] == "l1" and j8["tower"][2] == "o1"
        assert j8["grasp_by"] == j8["tower"][1] and j8["move_by"] == "l1"
    else:
        assert jobs["j8"]["status"] == "impossible"
    for job in jobs.values():  # every window closed before its deadline: every capable
        if job["status"] == "done":  # robot had answered, or the best team had granted
            assert job["selections"][0]["closed_by"] in ("all answered", "best team granted"), job
    assert stdout.count("summary.job") == len(jobs) and "summary.total" in stdout
    assert "led" in stdout and "state=helping" in stdout


@pytest.mark.parametrize("method", [1, 2])
def test_a_settled_team_asks_only_the_promised_helpers(method: int, tmp_path: Path) -> None:
    """``close_early = 3`` (the default): the factsheets of factory_8's settled team are
    right, so each paper job asks only the helpers it then selects, and theirs are the
    only grants. The window is long (30 s), so the quarter of it after which the others
    would be asked is never reached however slow the machine."""
    summary, _ = run_factory_8(tmp_path, f"method={method}", "window_s=30")
    jobs = by_id(summary)
    done = [jobs[f"j{i}"] for i in range(1, 9) if jobs[f"j{i}"]["status"] == "done"]
    assert len(done) == (8 if method == 2 else 6), jobs
    for job in done:
        assert job["rounds"] == 1, job
        assert job["selections"][0]["closed_by"] in ("all answered", "best team granted"), job
        assert job["asked"] == len(job["grants_ms"]) == len(job["helpers"]), job


JOB_3A_WITHOUT_IDLE_L1 = """
[team]
name = "TEAM"

[runtime]
tick_hz = 50
heartbeat_s = 1.0
keepalive_s = 2

[mission]
kind = "factory"
timeout_s = 60
comm_range = 1.5
ttl = 1
window_s = 0.1

[[agents]]
id = "jobs"
kind = "job_source"
jobs = [{ job = "job3a", robot = "m3", work_s = 0.3 }]
summary_path = "summary.json"

# factory_8's M3 and its Fig. 15 neighbours; L1 is in range but at 25 % battery,
# so not an idle robot (§II.B)
[[agents]]
id = "m3"
kind = "factory_robot"
type = "M"
position = [0.0, 0.0]

[[agents]]
id = "l1"
kind = "factory_robot"
type = "L"
position = [1.0, 0.0]
battery = 0.25

[[agents]]
id = "s1"
kind = "factory_robot"
type = "S1"
position = [-1.0, 0.0]

[[agents]]
id = "o1"
kind = "factory_robot"
type = "O1"
position = [0.0, 1.0]
"""


@pytest.mark.parametrize("method", [1, 2])
def test_job3a_without_an_idle_l1_assembles_m3_with_s1(method: int, team, tmp_path) -> None:
    """Fig. 12(c)'s job 3(a) team under both methods once L1 is not an idle neighbour:
    M3 does not ask L1, L1 would not grant, and the tower M3 + S1 reaches 4 units."""
    config = tmp_path / "job3a.toml"
    config.write_text(JOB_3A_WITHOUT_IDLE_L1.replace("TEAM", team))
    settings = (f"method={method}", f"window_s={MODES_WINDOW_S}")
    summary, _ = run_factory(config, "summary.json", tmp_path, *settings)
    (job,) = summary["jobs"]
    assert job["status"] == "done" and job["mode"] == "assembly", job
    assert job["tower"] == ["m3", "s1"] and job["height"] == 5 and job["move_by"] == "m3"
    # method 1: S1 alone fits C^req; method 2: every idle neighbour replies (S1, O1), and
    # the window closes once S1 (the best team) granted, so O1's grant may come after it
    if method == 1:
        assert len(job["grants_ms"]) == 1, job
    else:
        assert len(job["grants_ms"]) in (1, 2), job
        assert job["selections"][0]["closed_by"] in ("all answered", "best team granted"), job


async def test_member_selection_survives_message_loss(mosquitto, team) -> None:
    """factory_8's robots in this process (one MQTT client each) drop 25 % of their
    inbound favor messages, seeded; every paper job is still selected and done."""
    seed = random.randrange(10**6)
    print(f"loss seed={seed}")
    overrides = {"method": 2, "favor_loss": 0.25, "loss_seed": seed, "max_rounds": 20}
    config = apply_overrides(load_config(FACTORY_8), overrides)
    agents = [
        build_agent(config, spec.id, endpoint=mosquitto.endpoint, team=team)
        for spec in config.agents
    ]
    source = next(a for a in agents if isinstance(a, JobSource))
    source.summary_path = None
    async with asyncio.timeout(scaled(60)), contextlib.AsyncExitStack() as stack:
        for agent in agents:
            await stack.enter_async_context(agent)
        await source.main()
    jobs = source.results
    paper = [f"j{i}" for i in range(1, 9)]
    assert all(jobs[j]["status"] == "done" for j in paper), (seed, jobs)
    assert jobs["j1"]["mode"] == "assembly" and "o1" in jobs["j1"]["tower"]
    assert jobs["j8"]["mode"] == "assembly" and "o1" in jobs["j8"]["tower"]
    assert jobs["j6"]["mode"] == "solo"
    dropped = sum(a.stats["favor_dropped"] for a in agents if isinstance(a, FactoryRobot))
    assert dropped > 0, "the loss injection dropped nothing"
    print(f"dropped {dropped} favor messages; rounds: {[jobs[j]['rounds'] for j in paper]}")


KILL_TEAM = """
[[agents]]
id = "jobs"
kind = "job_source"
jobs = [{ job = "job1", robot = "m1", work_s = 4.0 }]
summary_path = "SUMMARY"

[[agents]]
id = "m1"
kind = "factory_robot"
type = "M"
silence_s = 0.8

[[agents]]
id = "o1"
kind = "factory_robot"
type = "O1"

[[agents]]
id = "o1b"
kind = "factory_robot"
type = "O1"

[[agents]]
id = "b1"
kind = "factory_robot"
type = "B"
"""


class ReportWatcher(Agent):
    """Collects every robot's job reports."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reports: list[tuple[str, dict]] = []

    async def setup(self) -> None:
        self.on_agents("job_report", self._on_report)

    async def _on_report(self, env, topic) -> None:
        self.reports.append((env.kind, env.body))

    def selected(self) -> list[dict]:
        return [b for k, b in self.reports if k == "job.selected"]


async def test_a_killed_helper_is_replaced(mosquitto, team, tmp_path, agent_procs) -> None:
    agents = KILL_TEAM.replace("SUMMARY", str(tmp_path / "summary.json"))
    config = write_config(tmp_path / "team.toml", team, agents, keepalive=1)
    text = config.read_text().replace('kind = "test"', 'kind = "factory"\nwindow_s = 0.1')
    config.write_text(text.replace("tick_hz = 20", "tick_hz = 50"))
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    watcher = ReportWatcher(
        "watcher", team=team, endpoint=mosquitto.endpoint, runtime=RuntimeSettings(keepalive_s=2)
    )
    async with asyncio.timeout(scaled(60)), watcher:
        await watcher.wait_connected(10)
        for agent_id in ("m1", "o1", "o1b", "b1", "jobs"):
            procs.start(agent_id)
        first = await eventually(lambda: watcher.selected(), 40, what="member selection")
        helper = first[0]["helpers"][0]
        assert first[0]["mode"] == "assembly" and helper in ("o1", "o1b")
        await asyncio.sleep(0.5)
        procs.kill(helper)
        await eventually(
            lambda: len(watcher.selected()) >= 2, 10, what="a new selection after the kill"
        )
        await eventually(lambda: procs.procs["jobs"].poll() is not None, 20, what="the job done")
    assert procs.procs["jobs"].returncode == 0, procs.log("jobs")[-3000:]
    other = "o1b" if helper == "o1" else "o1"
    second = watcher.selected()[1]
    assert second["mode"] == "assembly" and second["helpers"] == [other]
    summary = json.loads((tmp_path / "summary.json").read_text())
    (job,) = summary["jobs"]
    assert job["status"] == "done" and job["lost"] == [helper] and job["helpers"] == [other]
    for robot in ("m1", other, "b1"):  # everyone else ends with the run
        await eventually(lambda r=robot: procs.procs[r].poll() is not None, 10, what=robot)
        assert procs.procs[robot].returncode == 0


async def test_a_helper_low_on_battery_is_replaced(mosquitto, team) -> None:
    """In-process robots over mosquitto: O1 drains below 30 % while helping, revokes,
    and M1 re-selects the other O1; every LED goes back to idle."""
    runtime = RuntimeSettings(tick_hz=50, keepalive_s=2, heartbeat_s=1.0)
    common = {"team": team, "endpoint": mosquitto.endpoint, "runtime": runtime}
    m1 = FactoryRobot("m1", robot_type="M", **common)
    o1 = FactoryRobot("o1", robot_type="O1", battery=0.45, drain_per_s=0.15, **common)
    o1b = FactoryRobot("o1b", robot_type="O1", **common)
    source = JobSource(
        "jobs",
        robots=["m1", "o1", "o1b"],
        orders=[JobOrder("j1", "job1", "m1", work_s=2.5)],
        **common,
    )
    async with asyncio.timeout(scaled(40)), m1, o1, o1b, source:
        await source.main()
        await eventually(lambda: o1.led == "idle" and o1b.led == "idle" and m1.led == "idle", 5)
    (job,) = source.results.values()
    assert job["status"] == "done" and job["mode"] == "assembly", job
    assert [x["helper"] for x in job["lost"]] == ["o1"]
    assert "battery" in job["lost"][0]["reason"]
    assert job["helpers"] == ["o1b"] and [s["helpers"] for s in job["selections"]] == [
        ["o1"],
        ["o1b"],
    ]
    assert o1.battery <= 0.3 and not o1.factsheet()["available"]


FACTORY_24 = REPO / "configs" / "factory_24.toml"


@pytest.mark.slow
@pytest.mark.parametrize("method", [1, 2])
def test_factory_24_completes_every_possible_job(method: int, tmp_path: Path) -> None:
    """configs/factory_24.toml, 25 processes over mosquitto, three jobs at once: every job
    with a capable team ends done and every other one is reported impossible (eq. 18
    gives method 1 one helper, so 3(c) and 5 are impossible under it); the run exits 0
    only when every job is done, else 1 naming what was not (an honest outcome)."""
    if find_mosquitto() is None:
        pytest.skip("mosquitto is not installed")
    out = subprocess.run(
        teamtree_cmd("run", str(FACTORY_24), "--broker-kind", "mosquitto",
                     "--set", f"method={method}"),
        capture_output=True, text=True, timeout=420, cwd=tmp_path,
    )  # fmt: skip
    summary = json.loads((tmp_path / "runs" / "factory_24_summary.json").read_text())
    expected = 0 if summary["impossible"] == 0 else 1
    assert out.returncode == expected, out.stdout[-5000:] + out.stderr[-2000:]
    jobs = summary["jobs"]
    assert len(jobs) == 12 and summary["done"] + summary["impossible"] == 12, jobs
    for job in jobs:
        if job["status"] == "impossible":
            assert job["reason"].startswith(f"impossible under method {method}"), job
        else:
            closed = job["selections"][0]["closed_by"]
            assert closed in ("all answered", "best team granted", "deadline"), job
        if method == 1 and job["job"] in ("job3c", "job5"):
            assert job["status"] == "impossible", job
    by_job = {j["job_id"]: j for j in jobs}
    # job 1 (a heat camera) only by assembly with an O1 (§VII.A), job 2 by S2 with a helper
    assert by_job["j1"]["status"] == "done" and by_job["j1"]["mode"] == "assembly"
    assert any(m.startswith("o1") for m in by_job["j1"]["members"])
    assert by_job["j2"]["status"] == "done"
