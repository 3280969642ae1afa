"""Honest outcomes: what a mission achieved, judged by its own success criterion.

An agent that can judge a mission's criterion (the factory's job source: every job
done; the LTL planner: the formula satisfied; task-tree robots: the root done)
publishes a ``mission.result`` on the team channel ``_/result`` (retained, so it is
scoped to the mission). ``teamtree run`` collects those, the node transitions (who
did what) and the members' exit codes, prints a short result block and exits 0 only
when every member succeeded and no result says the criterion failed.

Success is checked, not believed: for a task-tree mission the last ``world.state``
(the world publishes one as it stops) must still show the tree's effects, every
needed object at its goal (an OR by one of its branches). Otherwise the run fails
naming each object and where the world shows it, whatever the members said.

Body of ``mission.result`` (``ResultBody``, docs/protocol.md): ``ok`` (bool), ``kind``
(mission kind), ``summary`` (one sentence), ``done`` and ``failed`` (lists of
``{"item", "by"|"reason"}``; empty when left out), and the ``mission`` the publisher's
runtime stamps it with. Receivers decode it with ``decode_result`` (strict), which
raises OutcomeWireError naming the field; a malformed result is dropped.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import msgspec
from msgspec import UNSET, Struct, UnsetType

from teamtree.agents.runtime.wire_decode import decode_body

RESULT_CHANNEL = "result"
RESULT_KIND = "mission.result"


class OutcomeWireError(ValueError):
    """A ``mission.result`` body that does not match its declared type."""


class DoneItem(Struct, frozen=True):
    """An item of ``done``: what was achieved and by whom (None: not known)."""

    item: str
    by: str | None


class FailedItem(Struct, frozen=True):
    """An item of ``failed``: what was not achieved and why."""

    item: str
    reason: str


class ResultBody(Struct, frozen=True):
    """The ``mission.result`` body; ``mission`` is added by the publisher's runtime
    (absent when it works for no mission)."""

    kind: str
    ok: bool
    summary: str
    done: list[DoneItem] = []
    failed: list[FailedItem] = []
    mission: str | UnsetType = UNSET


def decode_result(body: Any) -> ResultBody:
    """A ``mission.result`` body as a ResultBody; raises OutcomeWireError."""
    return decode_body(body, ResultBody, OutcomeWireError, RESULT_KIND)


def result_body(
    kind: str,
    ok: bool,
    summary: str,
    *,
    done: list[dict[str, Any]] | None = None,
    failed: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A ``mission.result`` body (see the module docstring)."""
    body = ResultBody(
        kind,
        bool(ok),
        summary,
        [DoneItem(d["item"], d["by"]) for d in done or []],
        [FailedItem(f["item"], f["reason"]) for f in failed or []],
    )
    return msgspec.to_builtins(body)


@dataclass
class MemberExit:
    """How one child of a run ended."""

    name: str
    role: str
    code: int | None
    last_words: list[str] = field(default_factory=list)  #: its last error lines


@dataclass
class OutcomeCollector:
    """Fed the team's messages (kind, sender, body) during a run; no I/O."""

    by: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    tree: dict[str, Any] | None = None  #: the task tree of a ``tasktree`` mission
    world: dict[str, Any] | None = None  #: the latest ``world.state``

    def feed(self, kind: str, sender: str, body: Any) -> None:
        """One message of the team."""
        if not isinstance(body, dict):
            return
        if kind == RESULT_KIND:
            try:
                self.results[sender] = msgspec.to_builtins(decode_result(body))
            except OutcomeWireError:
                return  # a malformed result says nothing about the mission
        elif kind == "ltl.verdict" and isinstance(body.get("satisfied"), bool):
            why = str(body.get("reason") or "")
            if body.get("impossible"):
                why = f"impossible: {why}"
            self.results[sender] = result_body(
                "ltl",
                body["satisfied"],
                f"formula {'satisfied' if body['satisfied'] else 'NOT satisfied'}: {why}",
            )
        elif kind == "mission.tree" and isinstance(body.get("tree"), dict):
            self._learn_labels(body["tree"])
            if body.get("kind") == "tasktree":
                self.tree = body["tree"]
        elif kind == "world.state" and sender == "world" and isinstance(body.get("objects"), dict):
            self.world = body
        elif kind == "node.transition" and body.get("status") == "done":
            agent, node = body.get("agent"), body.get("node")
            mine = isinstance(agent, str) and isinstance(node, str) and agent == sender
            if mine and node not in self.by[agent]:
                self.by[agent].append(node)

    def _learn_labels(self, tree: dict[str, Any]) -> None:
        stack = [tree]
        while stack:
            node = stack.pop()
            if isinstance(node, dict) and isinstance(node.get("id"), str):
                params = node.get("params") if isinstance(node.get("params"), dict) else {}
                if "behavior" in node:
                    obj = f"({params['object']})" if "object" in params else ""
                    self.labels[node["id"]] = f"{node['behavior']}{obj}"
                children = node.get("children")
                stack.extend(children if isinstance(children, list) else [])

    def world_shortfall(self) -> list[str]:
        """One line per needed object the last ``world.state`` shows away from its goal
        (empty when no task tree or no world state was seen)."""
        if self.tree is None or self.world is None:
            return []
        objects = self.world["objects"]
        missing: list[str] = []
        _met(self.tree, objects, missing)
        return missing

    def failures(self) -> list[str]:
        """One line per result whose criterion failed."""
        return [f"{who}: {r.get('summary', '')}" for who, r in self.results.items() if not r["ok"]]


def _met(node: Any, objects: dict[str, Any], missing: list[str]) -> bool:
    """Whether the world's `objects` show `node` (a ``mission.tree`` node) done; adds a
    line to `missing` for each needed object away from its goal. A leaf the world
    cannot judge (no object, a goal of its own, an object it does not know) counts as
    met: the members' word is all there is for it."""
    if not isinstance(node, dict):
        return True
    children = node.get("children")
    if isinstance(children, list) and children:
        if node.get("type") == "or":
            lines: list[str] = []
            if any(_met(c, objects, lines) for c in children):
                return True
            missing.append("none of " + " or ".join(lines))
            return False
        return all([_met(c, objects, missing) for c in children])  # every line, not the first
    params = node.get("params") if isinstance(node.get("params"), dict) else {}
    name = params.get("object")
    view = objects.get(name) if isinstance(name, str) and "goal" not in params else None
    if not isinstance(view, dict) or view.get("at_goal", True):
        return True
    missing.append(
        f"{name} is at {_where(view.get('position'))}, not at its goal {_where(view.get('goal'))}"
    )
    return False


def _where(position: Any) -> str:
    if isinstance(position, list) and all(isinstance(v, int | float) for v in position):
        return "(" + ", ".join(f"{v:.2f}" for v in position) + ")"
    return "an unknown place"


def judge(
    collector: OutcomeCollector, exits: list[MemberExit], *, timed_out: bool, interrupted: bool
) -> tuple[bool, str]:
    """(success, one-paragraph summary) of a run from what it saw."""
    reasons: list[str] = []
    if interrupted:
        reasons.append("the run was interrupted before the mission ended")
    if timed_out:
        running = [e.name for e in exits if e.role == "member" and e.code is None]
        reasons.append(
            f"the mission timed out with {', '.join(running) or 'members'} still running"
        )
    for e in exits:
        if e.role == "member" and e.code not in (0, None):
            why = f" ({e.last_words[-1]})" if e.last_words else ""
            reasons.append(f"member {e.name} exited with code {e.code}{why}")
        elif e.role != "member" and e.code not in (0, None):
            why = f" ({e.last_words[-1]})" if e.last_words else ""
            reasons.append(f"service {e.name} exited early with code {e.code}{why}")
    reasons += [f"criterion failed for {line}" for line in collector.failures()]
    shortfall = collector.world_shortfall()
    if shortfall:
        reasons.append("the world does not show the mission done: " + "; ".join(shortfall))
    if reasons:
        return False, "Mission FAILED: " + "; ".join(reasons) + "."
    oks = [r.get("summary", "") for r in collector.results.values() if r.get("summary")]
    return True, "Mission succeeded" + (f": {'; '.join(oks)}." if oks else ".")


def render_result_block(
    mission_id: str,
    collector: OutcomeCollector,
    exits: list[MemberExit],
    elapsed_s: float,
    ok: bool,
    summary: str,
) -> list[str]:
    """The short human-readable block every run ends with."""
    lines = [f"==== mission {mission_id}: {'SUCCEEDED' if ok else 'FAILED'} in {elapsed_s:.1f} s"]
    members = [e for e in exits if e.role == "member"]
    for e in members:
        did = [collector.labels.get(n, n) for n in collector.by.get(e.name, [])]
        state = "running" if e.code is None else f"exit {e.code}"
        work = ", ".join(did) if did else "no behaviours recorded"
        lines.append(f"  {e.name:<14} {state:<9} did: {work}")
    others = sorted(set(collector.by) - {e.name for e in members})
    for name in others:
        did = ", ".join(collector.labels.get(n, n) for n in collector.by[name])
        lines.append(f"  {name:<14} {'(outside)':<9} did: {did}")
    for who, result in sorted(collector.results.items()):
        mark = "ok" if result["ok"] else "FAILED"
        lines.append(f"  result from {who}: {mark}: {result.get('summary', '')}")
        for item in result.get("failed", [])[:10]:
            lines.append(f"    failed {item.get('item')}: {item.get('reason', '')}")
    lines.append(f"  {summary}")
    return lines
