"""Missions that come and go: the dispatch protocol and the mission-queue service."""

from teamtree.agents.missions.protocol import (
    DISPATCHABLE,
    SERVES,
    MissionRow,
    SubmissionError,
    check_alone,
    check_submission,
    mission_config,
    split_members,
    tree_objects,
)
from teamtree.agents.missions.queue import MissionQueue, serves
from teamtree.agents.missions.schedule import Need, conflicts, next_starts

__all__ = [
    "DISPATCHABLE",
    "SERVES",
    "MissionQueue",
    "MissionRow",
    "Need",
    "SubmissionError",
    "check_alone",
    "check_submission",
    "conflicts",
    "mission_config",
    "next_starts",
    "serves",
    "split_members",
    "tree_objects",
]
