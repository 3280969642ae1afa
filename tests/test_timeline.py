"""Timing-diagram spans from recorded transitions (agents.timeline.node_intervals), and one
mission of a record drawn with how it ended."""

from __future__ import annotations

import pytest

from teamtree.agents.observers.timeline import (
    missions_in,
    node_intervals,
    pick_mission,
    timeline_figure,
)
from teamtree.broker import ConfigError
from teamtree.planners.multitask import pick_and_place_tree


def rec(ts: int, sender: str, kind: str, body: dict) -> dict:
    return {"ts": ts, "sender": sender, "kind": kind, "body": body}


def test_a_skip_is_satisfied_in_every_other_copy_and_labels_keep_params() -> None:
    tree = pick_and_place_tree(["o1"]).to_dict()
    t = "node.transition"
    records = [
        rec(0, "a", "mission.tree", {"kind": "multitask", "tree": tree, "text": ""}),
        rec(1000, "a", t, {"node": "move-o1-1", "status": "skipped"}),
        rec(1000, "a", t, {"node": "pick-o1", "status": "working"}),
        rec(3000, "a", t, {"node": "pick-o1", "status": "done"}),
        rec(3000, "b", t, {"node": "move-o1-2", "status": "working"}),
        rec(4000, "b", t, {"node": "move-o1-2", "status": "done"}),
    ]
    spans, labels = node_intervals(records)
    assert labels["move-o1-1"] == "MOVE(o1, to=pick)"
    assert spans["a"]["move-o1-1"] == [(0.0, 3.0, "skipped")]
    assert spans["b"]["move-o1-1"] == [(0.0, 3.0, "done")]
    assert spans["a"]["pick-o1"] == [(0.0, 2.0, "working"), (2.0, 3.0, "done")]
    assert spans["b"]["pick-o1"] == [(2.0, 3.0, "done")]
    assert spans["b"]["move-o1-2"] == [(2.0, 3.0, "working"), (3.0, 3.0, "done")]


def _mission(mission: str, t0: int, end: str, reason: str) -> list[dict]:
    """Two robots' transitions of one mission over the same node ids, and its end."""
    t = "node.transition"
    tree = pick_and_place_tree(["o1"]).to_dict()
    stamp = {"mission": mission}
    status = {"kind": "multitask", "state": end, "reason": reason, **stamp}
    return [
        rec(t0, "a", "mission.tree", {"kind": "multitask", "tree": tree, "text": "", **stamp}),
        rec(t0 + 1000, "a", t, {"node": "pick-o1", "status": "working", **stamp}),
        rec(t0 + 2000, "b", t, {"node": "move-o1-1", "status": "working", **stamp}),
        rec(t0 + 3000, "a", "mission.status", {**status, "state": "running", "reason": ""}),
        rec(t0 + 4000, "run", "mission.status", status),
    ]


def test_one_mission_of_a_record_is_drawn_with_how_it_ended() -> None:
    records = _mission("m1", 0, "succeeded", "") + _mission("m2", 60_000, "timed_out", "after 4 s")
    assert missions_in(records) == ["m1", "m2"] and pick_mission(records, None) == "m2"
    late = timeline_figure(records, "m2")
    assert late.end is not None and late.end.state == "timed_out" and late.end.failed
    assert late.end_s == 3.0  # from its first transition, not the record's first message
    assert "TIMED OUT: after 4 s" in late.title("run")
    spans = [s for per in late.spans.values() for ss in per.values() for s in ss]
    assert max(end for _, end, _ in spans) <= 3.0  # nothing of m1, a minute earlier
    early = timeline_figure(records, "m1")
    assert early.end is not None and not early.end.failed
    assert set(early.rows()) == {"a", "b"} and len(early.rows()["a"]) == len(set(early.rows()["a"]))
    with pytest.raises(ConfigError, match="no mission m9; its missions: m1, m2"):
        pick_mission(records, "m9")
