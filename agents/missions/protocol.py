"""The mission dispatch protocol: submit, list and cancel missions of a running team.

Requests go to the team channel ``_/missions`` with reply-to and correlation id (as
every teamtree request); the mission queue answers on ``<queue>/reply/<requester>``:

==================  =========================================  =========================
request             body                                       reply (kind, body)
==================  =========================================  =========================
``mission.submit``  ``{mission: {kind, timeout_s, members?,  ``mission.accepted``
                    ...the kind's keys}}``                     ``{id, state, position}``
                                                               or ``mission.rejected``
                                                               ``{field, error}``
``mission.list``    ``{}``                                     ``mission.table``
                                                               ``{missions: [row...]}``
``mission.cancel``  ``{id}``                                   ``mission.cancelled``
                                                               ``{id, state}`` or
                                                               ``mission.rejected``
==================  =========================================  =========================

The queue also keeps the table retained on ``<queue>/missions`` (kind
``mission.table``), so a web page sees it without asking. A row: ``id``, ``kind``,
``state`` (queued, running, cancelling, done, failed, cancelled), ``submitted_ms``,
``started_ms``, ``ended_ms``, ``reason``, ``summary`` and ``members`` (who works it).

A submission is checked against the running team: its kind must be one the queue's
members serve, and each member that would work it must accept it as its own
``[mission]`` (the tree parses and names the world's objects, the LTL scenario or
formula parses, ...); otherwise ``mission.rejected`` names the field and nothing
changes.

The bodies are declared msgspec Structs in ``teamtree.agents.missions.wire`` (a
submission or cancel of the wrong shape is rejected naming the field by its path).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from teamtree.agents.missions.schedule import Need
from teamtree.agents.missions.wire import ACCEPTED as ACCEPTED
from teamtree.agents.missions.wire import CANCEL as CANCEL
from teamtree.agents.missions.wire import CANCELLED as CANCELLED
from teamtree.agents.missions.wire import CHANNEL as CHANNEL
from teamtree.agents.missions.wire import LIST as LIST
from teamtree.agents.missions.wire import REJECTED as REJECTED
from teamtree.agents.missions.wire import (
    SUBMIT,
    DispatchWireError,
    Row,
    SubmitRequest,
    decode_dispatch,
    to_wire,
)
from teamtree.agents.missions.wire import TABLE as TABLE
from teamtree.agents.missions.wire import TABLE_CHANNEL as TABLE_CHANNEL
from teamtree.agents.runtime.config import MissionSpec, TeamConfig, parse_mission
from teamtree.broker import ConfigError, SpecificationError
from teamtree.planners.tasktree import tree_from_dict

STATES = ("queued", "running", "cancelling", "done", "failed", "cancelled")
#: the mission kinds each built-in agent kind serves when a queue starts it; a plugin
#: kind declares its own as a class attribute ``mission_kinds``
SERVES: dict[str, tuple[str, ...]] = {
    "cobot": ("kitting",),
    "factory_robot": ("factory",),
    "hello": ("hello",),
    "job_source": ("factory",),
    "kitting_human": ("kitting",),
    "ltl_planner": ("ltl",),
    "ltl_robot": ("ltl",),
    "multitask_robot": ("multitask",),
    "robot": ("tasktree",),
}
#: mission kinds a queue can run (those some agent kind serves)
DISPATCHABLE = tuple(sorted({k for ks in SERVES.values() for k in ks}))
#: mission kinds whose members are interchangeable peers, so a mission may name some
#: (``members = ["pr2"]``) or ask for a number (``members = 1``); the other kinds need
#: their whole cast (an LTL mission its planner and robots) and take every member
CHOOSES_MEMBERS = frozenset({"tasktree", "multitask"})
#: the key of a submitted ``[mission]`` table that says which members work it
MEMBERS_KEY = "members"


class SubmissionError(ValueError):
    """A submission is wrong; `field` names where (e.g. ``mission.tree``)."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"[{field}] {message}")


@dataclass
class MissionRow:
    """One mission the queue knows of."""

    id: str
    kind: str
    state: str = "queued"
    submitted_ms: int = 0
    started_ms: int | None = None
    ended_ms: int | None = None
    reason: str = ""
    summary: str = ""
    members: list[str] = field(default_factory=list)
    submitted_by: str = ""
    cancelled_by: str = ""
    spec: dict[str, Any] = field(default_factory=dict, repr=False)
    need: Need | None = field(default=None, repr=False)

    def to_wire(self) -> dict[str, Any]:
        return to_wire(self.row())

    def row(self) -> Row:
        """This mission's row of the ``mission.table`` body."""
        return Row(
            self.id,
            self.kind,
            self.state,
            self.submitted_ms,
            self.started_ms,
            self.ended_ms,
            self.reason,
            self.summary,
            list(self.members),
            self.submitted_by,
            self.cancelled_by,
        )


def mission_config(config: TeamConfig, mission: MissionSpec, members: Any) -> TeamConfig:
    """`config` as the agents of one mission see it: `mission` as its ``[mission]`` and
    the on_call agents `members` as its members (so peers and rosters are exactly the
    agents that work the mission)."""
    chosen = set(members)
    agents = tuple(
        dataclasses.replace(a, role="member") if a.role == "on_call" and a.id in chosen else a
        for a in config.agents
    )
    return dataclasses.replace(config, mission=mission, agents=agents)


def split_members(table: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """A submitted ``[mission]`` table without its ``members`` key, and that key's value
    (None when absent): ``members`` is the queue's, not the mission kind's."""
    rest = {k: v for k, v in table.items() if k != MEMBERS_KEY}
    return rest, table.get(MEMBERS_KEY)


def check_members_listed(value: list[str]) -> None:
    """SubmissionError when a ``members`` list names a member twice (a body cannot
    work a mission twice over, and a count of members would be wrong)."""
    seen: set[str] = set()
    for member in value:
        if member in seen:
            raise SubmissionError(
                "mission.members",
                f"names {member!r} twice; list each member once (or give a number of members)",
            )
        seen.add(member)


def _need_members(value: Any, eligible: list[str], kind: str) -> tuple[frozenset[str], int | None]:
    """(eligible members, count) from a ``members`` value; SubmissionError otherwise."""
    if value is None:
        return frozenset(eligible), None
    if kind not in CHOOSES_MEMBERS:
        raise SubmissionError(
            "mission.members",
            f"cannot be chosen for a {kind} mission: it takes every {kind} member of the team "
            f"({', '.join(eligible)}); remove the key",
        )
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= len(eligible):
            raise SubmissionError(
                "mission.members",
                f"is {value}; give 1 to {len(eligible)} (the team's {kind} members: "
                f"{', '.join(eligible)})",
            )
        return frozenset(eligible), value
    if isinstance(value, list) and value and all(isinstance(m, str) for m in value):
        check_members_listed(value)
        wrong = [m for m in value if m not in eligible]
        if wrong:
            raise SubmissionError(
                "mission.members",
                f"names {wrong[0]!r}, which does not serve {kind} missions in this team "
                f"(those that do: {', '.join(eligible)})",
            )
        return frozenset(value), None
    raise SubmissionError(
        "mission.members",
        f"is {value!r}; give a number of members or a list of member ids "
        f"(the team's {kind} members: {', '.join(eligible)})",
    )


def tree_objects(spec: MissionSpec) -> frozenset[str]:
    """The objects a task-tree mission's leaves name (empty for other kinds)."""
    if spec.kind != "tasktree" or spec.params.get("tree") is None:
        return frozenset()
    tree = tree_from_dict(spec.params["tree"], where="mission.tree")
    found = (n.param_dict.get("object") for n in tree.nodes.values() if n.is_leaf)
    return frozenset(o for o in found if isinstance(o, str))


def check_alone(table: Any) -> MissionSpec:
    """A submitted ``[mission]`` table checked as far as it can be without the team:
    its keys and values as a config's ``[mission]``, a ``members`` list naming each
    member once, the tree's shape and size. SubmissionError naming the field otherwise.

    ``teamtree submit`` checks a mission file with it and the ROS 2 bridge a mission
    from ROS 2, before either asks the queue (which checks the rest against the team)."""
    if not isinstance(table, dict):
        raise SubmissionError("mission", "is not a table; give {kind, tree, ...}")
    rest, members = split_members(table)
    try:
        spec = parse_mission(rest, Path("<submitted>"))
    except ConfigError as exc:
        raise SubmissionError(exc.key or "mission", str(exc).split("] ", 1)[-1]) from None
    if isinstance(members, list):
        check_members_listed(members)
    try:
        tree_objects(spec)
    except SpecificationError as exc:
        raise SubmissionError("mission.tree", str(exc).removeprefix("mission.tree: ")) from None
    return spec


def check_submission(
    body: Any,
    objects: set[str] | None,
    served: Mapping[str, Iterable[str]] | None = None,
    check: Callable[[str, MissionSpec, frozenset[str]], None] | None = None,
) -> tuple[MissionSpec, Need]:
    """The mission of a ``mission.submit`` body and what it needs to run, validated;
    SubmissionError naming the field otherwise.

    `objects` are the world's objects (every leaf's object must be one of them), or
    None when the team has no world to check against. `served` maps each member the
    queue dispatches to onto the mission kinds it serves (default: every member
    ``tasktree``). `check(member, spec, members)` validates the mission as that member
    would read it (raising ConfigError), so a mission no member can work is refused
    before it is queued."""
    if not isinstance(body, dict) or body.get("mission") is None:
        raise SubmissionError("mission", "missing; send {mission: {kind, tree, ...}}")
    try:
        request: SubmitRequest = decode_dispatch(SUBMIT, body)
    except DispatchWireError as exc:
        raise SubmissionError("mission", f"{exc}; send {{mission: {{kind, tree, ...}}}}") from None
    table, members_value = split_members(request.mission)
    try:
        spec = parse_mission(table, Path("<submitted>"))
    except ConfigError as exc:
        raise SubmissionError(exc.key or "mission", str(exc).split("] ", 1)[-1]) from None
    served = {m: tuple(k) for m, k in (served or {}).items()}
    kinds = sorted({k for ks in served.values() for k in ks}) if served else list(DISPATCHABLE)
    if spec.kind not in kinds:
        raise SubmissionError(
            "mission.kind",
            f"is {spec.kind!r}; this team's members serve {', '.join(kinds) or 'no'} missions",
        )
    eligible = sorted(m for m, ks in served.items() if spec.kind in ks)
    members, count = (
        _need_members(members_value, eligible, spec.kind) if served else (frozenset(), None)
    )
    needed: frozenset[str] = frozenset()
    if spec.kind == "tasktree":
        raw = spec.params.get("tree")
        if raw is None:
            raise SubmissionError("mission.tree", 'missing; e.g. tree = "THEN(cup, sugar)"')
        try:
            needed = tree_objects(spec)
        except SpecificationError as exc:
            raise SubmissionError("mission.tree", str(exc).removeprefix("mission.tree: ")) from None
        if objects is not None:
            for obj in sorted(needed - objects):
                known = ", ".join(sorted(objects))
                raise SubmissionError(
                    "mission.tree", f"names object {obj!r}, which the world lacks (has: {known})"
                )
    if check is not None:
        for member in sorted(members):  # with a count, each as it may run: alone or with others
            try:
                check(member, spec, members if count is None else frozenset({member}))
            except ConfigError as exc:
                field = exc.key if exc.key and exc.key.startswith("mission") else "mission"
                raise SubmissionError(
                    field, f"{member} cannot work it: {str(exc).split('] ', 1)[-1]}"
                ) from None
    return spec, Need(members, count, needed)
