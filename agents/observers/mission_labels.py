"""Readable labels for the nodes of a ``mission.tree`` message, for observers (the
monitor, the recorder's summary, the timeline) that must not trust what they read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from teamtree.agents.treeprotocol.mission_wire import MissionWireError, decode_mission_tree

__all__ = ["mission_labels", "object_words", "plain_label", "tree_labels"]


def mission_labels(body: Any) -> tuple[dict[str, str], list[str]] | None:
    """``tree_labels`` of a ``mission.tree`` body decoded as its declared type
    (``MissionTreeBody``); None when the body is malformed, which observers ignore."""
    try:
        decoded = decode_mission_tree(body)
    except MissionWireError:
        return None
    return tree_labels(msgspec.to_builtins(decoded.tree))


def tree_labels(tree: Any) -> tuple[dict[str, str], list[str]]:
    """Node id -> readable label (``PLACE(cup)``, ``MOVE(o1, to=pick)``, a goal node's
    name or type), and the leaf ids left to right, from a ``mission.tree`` body's
    ``tree``. Best effort: parts that are not nodes are skipped, never raised on."""
    labels: dict[str, str] = {}
    leaves: list[str] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict) or not isinstance(node.get("id"), str):
            continue
        if "behavior" in node:
            params = node.get("params") if isinstance(node.get("params"), dict) else {}
            args = [str(params["object"])] if "object" in params else []
            args += [f"{k}={v}" for k, v in sorted(params.items(), key=str) if k != "object"]
            behavior = str(node["behavior"])
            labels[node["id"]] = f"{behavior}({', '.join(args)})" if args else behavior
            leaves.append(node["id"])
        else:
            labels[node["id"]] = str(node.get("name") or node.get("type") or node["id"])
        children = node.get("children")
        if isinstance(children, list):
            stack.extend(reversed(children))
    return labels, leaves


def object_words(name: Any) -> str:
    """An object's name as a person says it: ``tea_pot`` -> ``the tea pot``."""
    return "the " + str(name).replace("_", " ")


def plain_label(behavior: Any, params: Mapping[str, Any], *, doing: bool = False) -> str:
    """A leaf in plain words for a person: ``PLACE(cup)`` -> ``place the cup`` (with
    `doing`: ``placing the cup``), ``MOVE(o1, to=pick)`` -> ``move the o1 to pick``."""
    words = str(behavior or "do").lower().replace("_", " ").split() or ["do"]
    if doing:
        verb = words[0]
        stem = verb[:-1] if verb.endswith("e") and not verb.endswith("ee") else verb
        words[0] = stem + "ing"
    if "object" in params:
        words.append(object_words(params["object"]))
    words += [f"{str(k).replace('_', ' ')} {v}" for k, v in sorted(params.items()) if k != "object"]
    return " ".join(words)
