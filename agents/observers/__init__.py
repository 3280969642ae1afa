"""Observers: read a team from the broker without joining it (monitor, recorder, timeline,
the people's work, echo's filters, the one wire-to-JSON decoding, MCAP recordings and
their channels; the web view is the ``web`` subpackage). The live Foxglove server
(``foxglove_server``) needs the optional foxglove-sdk package, so it is imported by
name, not from here."""

from teamtree.agents.observers.echo_filter import EchoFilter
from teamtree.agents.observers.event_words import event_words
from teamtree.agents.observers.human_work import HumanWork, WorkEvent, human_rows
from teamtree.agents.observers.live_view import log_line, scene_update, tree_message
from teamtree.agents.observers.mcap_record import (
    McapRecordFile,
    is_mcap,
    read_mcap_log,
    read_mcap_records,
)
from teamtree.agents.observers.mission_labels import (
    mission_labels,
    object_words,
    plain_label,
    tree_labels,
)
from teamtree.agents.observers.monitor import MonitorState, TeamObserver, render_text
from teamtree.agents.observers.record_channels import (
    channel_topic,
    record_schema,
    warm_schemas,
)
from teamtree.agents.observers.record_file import RecordFile, os_error_phrase
from teamtree.agents.observers.recorder import RecorderAgent, behaviour_summary
from teamtree.agents.observers.timeline import (
    MissionEnd,
    TimelineFigure,
    draw_timeline,
    load_records,
    mission_end,
    mission_records,
    missions_in,
    node_intervals,
    pick_mission,
    timeline_figure,
)
from teamtree.agents.observers.wire_json import jsonable, message_record, record_json
from teamtree.agents.observers.wire_kinds import KNOWN_KINDS, body_type, kinds_matching

__all__ = [
    "KNOWN_KINDS",
    "EchoFilter",
    "HumanWork",
    "McapRecordFile",
    "MissionEnd",
    "MonitorState",
    "RecordFile",
    "RecorderAgent",
    "TeamObserver",
    "TimelineFigure",
    "WorkEvent",
    "behaviour_summary",
    "body_type",
    "channel_topic",
    "draw_timeline",
    "event_words",
    "human_rows",
    "is_mcap",
    "jsonable",
    "kinds_matching",
    "load_records",
    "log_line",
    "message_record",
    "mission_end",
    "mission_labels",
    "mission_records",
    "missions_in",
    "node_intervals",
    "object_words",
    "os_error_phrase",
    "pick_mission",
    "plain_label",
    "read_mcap_log",
    "read_mcap_records",
    "record_json",
    "record_schema",
    "render_text",
    "scene_update",
    "timeline_figure",
    "tree_labels",
    "tree_message",
    "warm_schemas",
]
