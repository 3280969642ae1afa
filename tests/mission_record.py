"""Checks on a recorder's file (``teamtree record``): what the compose tests read from
the ``runs`` volume to tell that a mission really ran, and ran once."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from teamtree.agents.observers.mission_labels import tree_labels


def leaves_of(records: list[dict[str, Any]]) -> dict[str, str]:
    """Leaf id -> label from the last ``mission.tree`` in the record."""
    trees = [r for r in records if r["kind"] == "mission.tree" and isinstance(r["body"], dict)]
    assert trees, "the record holds no mission.tree"
    labels, leaves = tree_labels(trees[-1]["body"].get("tree"))
    return {leaf: labels[leaf] for leaf in leaves}


NO_ROBOT = "(no robot)"


def done_by(records: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Leaf id -> the robots whose node.transition said it was done (in order), or
    ``[NO_ROBOT]`` for a leaf that only live snapshots list as done: the human's (a
    person publishes no task state; the robots infer it from the hand, seed 000 §2.3).
    Retained snapshots (an earlier mission's) do not count."""
    out: dict[str, list[str]] = defaultdict(list)
    seen_done: set[str] = set()
    for r in records:
        body = r["body"] if isinstance(r["body"], dict) else {}
        if r["kind"] == "node.transition" and body.get("status") == "done":
            out[str(body.get("node"))].append(str(body.get("agent") or r["sender"]))
        elif r["kind"] == "node.snapshot" and not r.get("retained", False):
            seen_done.update(str(n) for n in body.get("done") or [])
    for node in seen_done - set(out):
        out[node].append(NO_ROBOT)
    return dict(out)


def executions(records: list[dict[str, Any]]) -> Counter[tuple[str, str]]:
    """(agent, leaf) -> how many times that agent started working on that leaf."""
    return Counter(
        (str(r["body"].get("agent") or r["sender"]), str(r["body"].get("node")))
        for r in records
        if r["kind"] == "node.transition"
        and isinstance(r["body"], dict)
        and r["body"].get("status") == "working"
    )


def assert_each_leaf_done_once(records: list[dict[str, Any]]) -> dict[str, str]:
    """Every leaf of the mission is reported done, by one agent, and no leaf is done by
    two (no behaviour ran on two bodies). Returns leaf label -> the agent that did it."""
    leaves = leaves_of(records)
    done = done_by(records)
    missing = [label for leaf, label in leaves.items() if leaf not in done]
    assert not missing, f"not done in the record: {missing}"
    twice = {leaves[leaf]: agents for leaf, agents in done.items() if len(set(agents)) > 1}
    assert not twice, f"leaves done by more than one agent: {twice}"
    return {leaves[leaf]: agents[0] for leaf, agents in done.items() if leaf in leaves}


def placed_but_not_counted(records: list[dict[str, Any]]) -> list[str]:
    """Labels of PLACE leaves whose object the world shows at its goal while nobody
    counted the leaf done: the mission is physically over but the robots' trees are
    not (what a robot's theory of mind can miss, seed 000 §2.3)."""
    trees = [r for r in records if r["kind"] == "mission.tree" and isinstance(r["body"], dict)]
    states = [r for r in records if r["kind"] == "world.state" and isinstance(r["body"], dict)]
    if not trees or not states:
        return []
    objects = states[-1]["body"].get("objects") or {}
    done = done_by(records)
    out = []
    stack = [trees[-1]["body"].get("tree")]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        stack.extend(node.get("children") or [])
        obj = (node.get("params") or {}).get("object")
        at_goal = (objects.get(obj) or {}).get("at_goal")
        if node.get("behavior") == "PLACE" and node.get("id") not in done and at_goal:
            out.append(f"PLACE({obj})")
    return sorted(out)
