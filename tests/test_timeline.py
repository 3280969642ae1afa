"""Timing-diagram spans from recorded transitions (agents.timeline.node_intervals)."""

from __future__ import annotations

from teamtree.agents.observers.timeline import node_intervals
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
