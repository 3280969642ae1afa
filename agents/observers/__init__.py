"""Observers: read a team from the broker without joining it (monitor, recorder, timeline,
the people's work; the web view is the ``web`` subpackage)."""

from teamtree.agents.observers.human_work import HumanWork, WorkEvent, human_rows
from teamtree.agents.observers.mission_labels import (
    mission_labels,
    object_words,
    plain_label,
    tree_labels,
)
from teamtree.agents.observers.monitor import MonitorState, TeamObserver, render_text
from teamtree.agents.observers.record_file import RecordFile, os_error_phrase
from teamtree.agents.observers.recorder import RecorderAgent, behaviour_summary
from teamtree.agents.observers.timeline import draw_timeline, load_records, node_intervals

__all__ = [
    "HumanWork",
    "MonitorState",
    "RecordFile",
    "RecorderAgent",
    "TeamObserver",
    "WorkEvent",
    "behaviour_summary",
    "draw_timeline",
    "human_rows",
    "load_records",
    "mission_labels",
    "node_intervals",
    "object_words",
    "os_error_phrase",
    "plain_label",
    "render_text",
    "tree_labels",
]
