"""Missions that come and go: the dispatch protocol and the mission-queue service."""

from teamtree.agents.missions.protocol import (
    DISPATCHABLE,
    MissionRow,
    SubmissionError,
    check_submission,
)
from teamtree.agents.missions.queue import MissionQueue

__all__ = ["DISPATCHABLE", "MissionQueue", "MissionRow", "SubmissionError", "check_submission"]
