"""Observers' views of a team's mission: its progress from live messages, and the
robots' node snapshots read without joining the team."""

from teamtree.agents.observers.mission.progress import MissionProgress
from teamtree.agents.observers.mission.snapshots import read_snapshots

__all__ = ["MissionProgress", "read_snapshots"]
