"""A factory mission's own jobs (``[mission] jobs``/``random_jobs``) and the kitting
episode's ``mission.result``: what a serving team reads from a submitted mission."""

from __future__ import annotations

import pytest

from teamtree.agents.allocation.kitting import kitting_result
from teamtree.agents.capability.factory import JobSource
from teamtree.agents.runtime.config import load_config
from teamtree.broker import ConfigError
from tests.conftest import REPO

QUEUE = REPO / "configs" / "factory_queue.toml"


def _with_mission(tmp_path, mission: str):
    path = tmp_path / "factory_queue.toml"
    path.write_text(QUEUE.read_text().replace('[mission]\nkind = "none"\n', mission))
    return load_config(path)


def test_the_missions_jobs_replace_the_sources_own(tmp_path) -> None:
    config = _with_mission(
        tmp_path,
        '[mission]\nkind = "factory"\njobs = [{ job = "job4", robot = "s2", work_s = 0.2 }]\n'
        "random_jobs = 2\n",
    )
    source = JobSource.params_from_config(config.agent("jobs"), config)
    orders = source["orders"]
    assert [(o.job_id, o.robot) for o in orders] == [("j1", "s2"), ("j2", None), ("j3", None)]
    assert orders[0].job == "job4" and orders[0].work_s == 0.2 and orders[1].work_s == 0.5
    assert source["robots"] == ["m1", "o1", "s1", "s2"]


def test_a_mission_without_jobs_gets_a_clear_error_naming_mission_jobs(tmp_path) -> None:
    config = _with_mission(tmp_path, '[mission]\nkind = "factory"\nmethod = 2\n')
    with pytest.raises(ConfigError) as err:  # the source of factory_queue has no own jobs
        JobSource.params_from_config(config.agent("jobs"), config)
    assert err.value.key == "agents[0].jobs", str(err.value)


@pytest.mark.parametrize(
    ("jobs", "key"),
    [
        ('jobs = [{ job = "job9" }]', "mission.jobs[0].job"),
        ('jobs = [{ job = "job1", robot = "l1" }]', "mission.jobs[0].robot"),
        ('jobs = [{ job = "job1", speed = 2 }]', "mission.jobs[0].speed"),
        ('jobs = "job1"', "mission.jobs"),
        ("random_jobs = -1", "mission.random_jobs"),
        ("jobs = []", "mission.jobs"),
    ],
)
def test_a_wrong_mission_job_names_its_key(tmp_path, jobs: str, key: str) -> None:
    config = _with_mission(tmp_path, f'[mission]\nkind = "factory"\n{jobs}\n')
    with pytest.raises(ConfigError) as err:
        JobSource.params_from_config(config.agent("jobs"), config)
    assert err.value.key == key, str(err.value)


def test_the_kitting_result_is_ok_only_for_a_complete_kit() -> None:
    summary = {
        "pattern_correct": True,
        "makespan": 141.5,
        "robot_to_human": 11,
        "human_to_robot": 1,
        "wrong_human_actions": 1,
    }
    good = kitting_result(summary)
    assert good["ok"] is True and good["kind"] == "kitting"
    assert good["summary"].startswith("kit complete in 141.5 s"), good
    bad = kitting_result({**summary, "pattern_correct": False})
    assert bad["ok"] is False and "NOT complete" in bad["summary"], bad
