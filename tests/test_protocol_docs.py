"""docs/protocol.md, docs/favors.md, docs/allocation.md, docs/missions.md, docs/ltl.md
and docs/humans.md are checked against the declared wire types: a body's keys in the
docs' tables must be exactly the fields of its Struct (and those marked ``?`` its
optional ones, where a table marks them)."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import msgspec
import pytest

from teamtree.agents.allocation import kitting_wire as kw
from teamtree.agents.allocation.wire import AllocationResult, ScheduleResult
from teamtree.agents.capability.favor_wire import (
    LEASE_BODIES,
    CapabilityWire,
    LeaseWire,
    OfferWire,
    QueryWire,
    RequestWire,
)
from teamtree.agents.ltl import ltl_wire
from teamtree.agents.missions import wire as dw
from teamtree.agents.runtime.outcome import RESULT_KIND, DoneItem, FailedItem, ResultBody
from teamtree.agents.runtime.resync import (
    SYNC_DONE,
    SYNC_REQUEST,
    SyncDoneBody,
    SyncRequestBody,
)
from teamtree.agents.treeprotocol import dialog_wire
from teamtree.agents.treeprotocol.decided_wire import ClaimDecidedWire
from teamtree.agents.treeprotocol.peer_wire import (
    AckedWire,
    ClaimWire,
    InterestAcksWire,
    InterestAckWire,
    InterestWire,
    LeafSnapshotWire,
    LeafTransitionWire,
    PotentialsWire,
    ReplyWire,
    ReportWire,
    SnapshotWire,
    TransitionWire,
    UnitTransitionWire,
)
from teamtree.hardware import sim_wire

DOCS = Path(__file__).resolve().parent.parent / "docs"
_KEY = re.compile(r"^([a-z_][a-z0-9_]*)\??$")


def braces(text: str, start: int = 0) -> str:
    """The first balanced ``{...}`` in `text` from `start`, without the braces."""
    i = text.index("{", start)
    depth = 0
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i + 1 : j]
    raise AssertionError(f"unbalanced braces in {text!r}")


def keys(inner: str) -> dict[str, str]:
    """Top-level ``key: value`` parts of a brace body -> {key: value text}."""
    parts, depth, cur = [], 0, ""
    for ch in re.sub(r"\s#\s[^\n]*", "", inner):
        depth += {"{": 1, "[": 1, "(": 1, "}": -1, "]": -1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    out = {}
    for part in parts:
        name, _, value = part.strip().partition(":")
        match = _KEY.match(name.strip())
        if match:
            out[match[1]] = value.strip()
    return out


def fields(typ: type[msgspec.Struct]) -> set[str]:
    return set(typ.__struct_encode_fields__)


def table_rows(path: Path) -> list[list[str]]:
    rows = []
    for line in path.read_text().splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
            rows.append([c.strip().replace("\\|", "|") for c in cells])
    return rows


def body_of(path: Path, kind: str) -> str:
    """The body cell of the table row whose kind column is `kind`."""
    for row in table_rows(path):
        if len(row) >= 5 and row[1] == f"`{kind}`":
            return row[4]
    raise AssertionError(f"{path.name}: no table row for {kind}")


PEER = {
    "node.claim": ClaimWire,
    "node.claim_reply": ReplyWire,
    "node.transition": TransitionWire,
    "node.snapshot": SnapshotWire,
    "node.potentials": PotentialsWire,
    "node.interest": InterestWire,
    "node.interest_ack": InterestAckWire,
    "node.interest_acks": InterestAcksWire,
    "node.claim_decided": ClaimDecidedWire,
}


@pytest.mark.parametrize("kind", sorted(PEER))
def test_protocol_md_task_tree_bodies_match_the_types(kind: str) -> None:
    documented = keys(braces(body_of(DOCS / "protocol.md", kind)))
    assert set(documented) == fields(PEER[kind]), kind
    if kind == "node.claim_reply":
        assert set(keys(braces(documented["reports"]))) == fields(ReportWire)
    if kind in ("node.interest_ack", "node.interest_acks"):
        assert set(keys(braces(documented["own"]))) == fields(InterestWire)
    if kind == "node.interest_acks":
        assert set(keys(braces(documented["acks"]))) == fields(AckedWire)


def test_multitask_md_transitions_match_the_types() -> None:
    """A leaf's ``node.transition``: the keys every one has, and those ``working`` adds;
    a unit's carries its leaves (and never a potential or a grasp score)."""
    cell = body_of(DOCS / "multitask.md", "node.transition")
    every = set(keys(braces(cell)))
    added = set(re.findall(r"`([a-z_]+)(?::[^`]*)?`", cell[cell.index("adds") :]))
    assert every == fields(LeafTransitionWire) - _optional(LeafTransitionWire)
    assert added == _optional(LeafTransitionWire)
    unit = set(keys(braces(body_of(DOCS / "multitask.md", "unit.transition"))))
    assert unit == fields(UnitTransitionWire) - _optional(UnitTransitionWire)
    snapshot = set(keys(braces(body_of(DOCS / "multitask.md", "node.snapshot"))))
    assert snapshot == fields(LeafSnapshotWire)


def test_favors_md_request_body_matches_the_types() -> None:
    text = (DOCS / "favors.md").read_text()
    block = text[text.index("`favor.request` (envelope") :]
    block = block[block.index("```") + 3 :]
    block = block[: block.index("```")]
    documented = keys(braces(block))
    assert set(documented) == fields(RequestWire)
    query = keys(braces(documented["query"]))
    assert set(query) == fields(QueryWire)
    assert set(keys(braces(query["c_job"]))) == fields(CapabilityWire)


def test_favors_md_lease_bodies_match_the_types() -> None:
    text = (DOCS / "favors.md").read_text()
    common = keys(braces(text[text.index("Lease messages, all with") :]))
    assert set(common) == fields(LeaseWire)
    documented = {}
    for row in table_rows(DOCS / "favors.md"):
        if len(row) == 2 and row[0].strip("`") in LEASE_BODIES:
            first = re.match(r"`([^`]*)`", row[1])
            assert first, row
            documented[row[0].strip("`")] = first[1]
    assert set(documented) == set(LEASE_BODIES)
    for kind, cell in documented.items():
        extra = fields(LEASE_BODIES[kind]) - fields(LeaseWire)
        assert set(keys(cell)) == extra, kind
        if kind == "favor.grant":
            assert set(keys(braces(keys(cell)["offer"]))) == fields(OfferWire)


def test_the_checker_sees_a_mismatch() -> None:
    """The parser is strict enough to notice a key that is not declared."""
    assert set(keys(braces("`{node, agent, colour: red}`"))) != fields(TransitionWire)


def test_allocation_md_result_bodies_match_the_types() -> None:
    text = (DOCS / "allocation.md").read_text()
    start = text.index("`allocation` = `{")
    assert set(keys(braces(text, start))) == fields(AllocationResult)
    start = text.index("`schedule` = `{", start)
    assert set(keys(braces(text, start))) == fields(ScheduleResult)


def _zmq_rows() -> dict[str, list[str]]:
    """op -> (request cell, reply cell) of docs/protocol.md's ZeroMQ request table."""
    text = (DOCS / "protocol.md").read_text()
    start = text.index("### The simulated world's ZeroMQ requests")
    section = text[start : text.index("\n## ", start)]
    rows = {}
    for line in section.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def _documented(cell: str) -> tuple[set[str], set[str]]:
    """(every key, the keys marked optional with ``?``) of a ``{a, b?}`` cell."""
    inner = braces(cell)
    return set(keys(inner)), set(re.findall(r"([a-z_]+)\?", inner))


def _optional(typ: type[msgspec.Struct]) -> set[str]:
    info = msgspec.inspect.type_info(typ)
    return {f.encode_name for f in info.fields if not f.required}  # type: ignore[attr-defined]


def test_protocol_md_zeromq_requests_match_the_types() -> None:
    rows = _zmq_rows()
    assert set(rows) == set(sim_wire.OPS)
    base, base_reply = fields(sim_wire.RequestBase), fields(sim_wire.Reply)
    for op, (request_cell, reply_cell) in rows.items():
        request = sim_wire.REQUEST_TYPES[op]
        documented, optional = _documented(request_cell)
        assert documented == fields(request) - base, op
        assert optional == _optional(request) - base, op
        reply = sim_wire.REPLY_TYPES[op]
        documented, optional = _documented(reply_cell)
        assert documented == fields(reply) - base_reply, op
        assert optional == _optional(reply) - base_reply, op


def test_protocol_md_zeromq_event_and_reply_match_the_types() -> None:
    text = (DOCS / "protocol.md").read_text()
    start = text.index("### The simulated world's ZeroMQ requests")
    reply = braces(text, text.index("Every reply is `{", start))
    assert set(keys(reply)) == fields(sim_wire.Reply)
    event = braces(text, text.index("Each entry of `events`", start))
    assert set(keys(event)) == fields(sim_wire.Event)
    assert set(re.findall(r"([a-z_]+)\?", event)) == _optional(sim_wire.Event)


def _row_bodies(path: Path, body_column: int) -> dict[str, str]:
    """kind -> body cell of every row of `path`'s message tables."""
    out = {}
    for row in table_rows(path):
        if len(row) > body_column and re.fullmatch(r"`[a-z_.]+`", row[1]):
            out[row[1].strip("`")] = row[body_column]
    return out


@pytest.mark.parametrize("kind", sorted(ltl_wire.BODIES))
def test_ltl_md_bodies_match_the_types(kind: str) -> None:
    cell = _row_bodies(DOCS / "ltl.md", 3)[kind]
    documented, optional = _documented(cell)
    typ = ltl_wire.BODIES[kind]
    if typ is ltl_wire.VerdictWire:  # a view: the fields every verdict has
        assert fields(typ) <= documented
        return
    assert documented == fields(typ), kind
    assert optional == _optional(typ), kind


@pytest.mark.parametrize("kind", sorted(dialog_wire.BODIES))
def test_humans_md_bodies_match_the_types(kind: str) -> None:
    cell = _row_bodies(DOCS / "humans.md", 4)[kind]
    documented, optional = _documented(cell)
    assert documented == fields(dialog_wire.BODIES[kind]), kind
    assert optional == _optional(dialog_wire.BODIES[kind]), kind


# -- the docs' tables list the Structs' fields ------------------------------------------


def _kitting_rows() -> dict[str, str]:
    """kind -> body cell of docs/allocation.md's kitting message table."""
    rows = {}
    for row in table_rows(DOCS / "allocation.md"):
        if len(row) == 4 and row[1].strip("`") in kw.BODIES:
            rows[row[1].strip("`")] = row[3]
    return rows


def _options(value: str) -> set[str | None]:
    return {None if v == "null" else v.strip('"') for v in value.split("|")}


def _literal(typ: type, name: str) -> set[str | None]:
    hint = typing.get_type_hints(typ)[name]
    parts = (hint,) if typing.get_origin(hint) is typing.Literal else typing.get_args(hint)
    out: set[str | None] = set()
    for part in parts:
        out |= {None} if part is type(None) else set(typing.get_args(part))
    return out


def test_allocation_md_kitting_bodies_match_the_types() -> None:
    rows = _kitting_rows()
    assert set(rows) == set(kw.BODIES)
    for kind in (kw.HUMAN_ACTION, kw.ROBOT_ACTION, kw.START, kw.PLAN):
        documented = keys(braces(rows[kind]))
        assert set(documented) == fields(kw.BODIES[kind]), kind
        for name, value in documented.items():
            if value.startswith('"') or value.startswith("null"):
                assert _options(value) == _literal(kw.BODIES[kind], name), (kind, name)
    text = (DOCS / "allocation.md").read_text()
    start = text.index("Summary (`kitting.done` body")
    summary = text[text.index(":", start) : text.index("\n\n", start)]
    summary = re.sub(r"\([^)]*\)", "", summary)
    assert set(re.findall(r"`([a-z_0-9]+)`", summary)) == fields(kw.DoneBody)


def test_missions_md_dispatch_table_matches_the_types() -> None:
    rows = {
        row[0].strip("`"): row[1:]
        for row in table_rows(DOCS / "missions.md")
        if len(row) == 3 and row[0].strip("`") in dw.REQUESTS
    }
    assert set(rows) == set(dw.REQUESTS)
    replies: dict[str, str] = {}
    for kind, (body, reply) in rows.items():
        assert set(keys(braces(body))) == fields(dw.REQUESTS[kind]), kind
        for name, inner in re.findall(r"`(mission\.[a-z]+) (\{[^`]*\})`", reply):
            replies[name] = inner
    assert set(replies) == {dw.ACCEPTED, dw.REJECTED, dw.TABLE, dw.CANCELLED}
    for kind, inner in replies.items():
        assert set(keys(braces(inner))) == fields(dw.REPLIES[kind]), kind
    text = (DOCS / "missions.md").read_text()
    start = text.index("A row: `id`")
    end = text.find("\n\n", start)
    row = re.sub(r"\([^)]*\)", "", text[start : end if end > 0 else len(text)])
    assert set(re.findall(r"`([a-z_]+)`", row)) == fields(dw.Row)


def test_protocol_md_result_table_and_sync_bodies_match_the_types() -> None:
    protocol = DOCS / "protocol.md"
    assert set(keys(braces(body_of(protocol, RESULT_KIND)))) == fields(ResultBody)
    table = keys(braces(body_of(protocol, dw.TABLE)))
    assert set(table) == fields(dw.Table)
    assert set(keys(braces(table["missions"]))) == fields(dw.Row)
    sync = body_of(protocol, SYNC_REQUEST)
    assert set(keys(braces(sync))) == fields(SyncRequestBody) == set()
    done = sync.index(f"`{SYNC_DONE}` `{{")
    assert set(keys(braces(sync, done))) == fields(SyncDoneBody)
    text = (DOCS / "missions.md").read_text()
    start = text.index("`mission.result` is on the team channel")
    documented = keys(braces(text, start + 20))
    assert set(documented) == fields(ResultBody)
    assert set(keys(braces(documented["done"]))) == fields(DoneItem)
    assert set(keys(braces(documented["failed"]))) == fields(FailedItem)
