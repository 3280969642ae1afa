"""The runtime's typed bodies: behaviour commands and progress (robot <-> driver),
presence and heartbeat. Any body decodes to its Struct or raises the wire's
ValueError naming the field, never anything else; encoding round-trips; and
docs/protocol.md's tables list exactly the Structs' fields."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgpack
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.runtime.behaviour_wire import (
    COMMAND_BODIES,
    BehaviourWireError,
    CommandRef,
    ExecuteCommand,
    Progress,
    RenewCommand,
    decode_command,
    decode_progress,
    to_wire,
)
from teamtree.agents.runtime.presence_wire import (
    HeartbeatBody,
    Presence,
    PresenceBody,
    PresenceWireError,
    decode_heartbeat,
    decode_presence,
    heartbeat_body,
    presence_body,
)
from teamtree.agents.runtime.team_view import TeamView
from tests.test_protocol_docs import body_of, braces, fields, keys
from tests.wire_strategies import WIRE_INTS

DOCS = Path(__file__).resolve().parent.parent / "docs"

scalars = st.none() | st.booleans() | WIRE_INTS | st.floats() | st.text(max_size=8)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
FIELDS = ["command_id", "node", "behaviour", "params", "lease_ms", "token", "robot", "ok",
          "reason", "t", "state", "kind", "session", "uptime_ms", "sent", "received", "dropped"]  # fmt: skip
bodies = values | st.dictionaries(st.sampled_from(FIELDS), values, max_size=8)


def _over_the_wire(body: Any) -> Any:
    """As a receiver sees it: msgpack round trip (tuples become lists)."""
    return msgpack.unpackb(msgpack.packb(body), raw=False, strict_map_key=False)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(COMMAND_BODIES)), bodies)
def test_any_command_body_decodes_or_names_its_fault(kind: str, body: Any) -> None:
    try:
        command = decode_command(kind, body)
    except BehaviourWireError as exc:
        assert "body" in str(exc)
        return
    assert isinstance(command, COMMAND_BODIES[kind])
    assert decode_command(kind, _over_the_wire(to_wire(command))) == command


@settings(max_examples=100, deadline=None)
@given(bodies)
def test_any_progress_presence_heartbeat_body_decodes_or_names_its_fault(body: Any) -> None:
    for decode, error in (
        (decode_progress, BehaviourWireError),
        (decode_presence, PresenceWireError),
        (decode_heartbeat, PresenceWireError),
    ):
        try:
            decoded = decode(body)
        except error as exc:
            assert isinstance(exc, ValueError) and "body" in str(exc)
            continue
        assert decode(_over_the_wire(msgspec.to_builtins(decoded))) == decoded


def test_errors_name_the_field() -> None:
    with pytest.raises(BehaviourWireError, match=r"\$\.lease_ms"):
        decode_command("behaviour.renew", {"command_id": "c1", "lease_ms": "soon"})
    with pytest.raises(BehaviourWireError, match="command_id"):
        decode_command("behaviour.execute", {"behaviour": "place"})
    with pytest.raises(BehaviourWireError, match=r"unknown command kind 'behaviour\.dance'"):
        decode_command("behaviour.dance", {"command_id": "c1"})
    with pytest.raises(PresenceWireError, match=r"\$\.state"):
        decode_presence({"state": "ASLEEP"})
    with pytest.raises(ValueError, match=r"\$\.state"):
        TeamView("me").apply_presence("other", {"state": 3}, 1)


def test_the_wire_shapes_stay_what_they_were() -> None:
    """The bodies the robot, drivers and every agent sent as hand-made maps before."""
    execute = ExecuteCommand("c1", "place", "root/0", {"object": "cup"}, 1_000, [5, 0, "r"])
    assert to_wire(execute) == {"command_id": "c1", "behaviour": "place", "node": "root/0",
                                "params": {"object": "cup"}, "lease_ms": 1_000,
                                "token": [5, 0, "r"], "sent_ms": None,
                                "clock": None}  # fmt: skip
    assert to_wire(RenewCommand("c1", 2_000, "root/0", [5, 0, "r"], 0, "r-s1")) == {
        "command_id": "c1", "lease_ms": 2_000, "node": "root/0", "token": [5, 0, "r"],
        "sent_ms": 0, "clock": "r-s1"
    }  # fmt: skip
    assert to_wire(CommandRef("c1", "root/0")) == {"command_id": "c1", "node": "root/0"}
    assert decode_command("behaviour.cancel", {"command_id": None, "lost": True}) == CommandRef()
    assert to_wire(Progress("c1", "root/0", "pr2", True, None, 1.5)) == {
        "command_id": "c1", "node": "root/0", "robot": "pr2", "ok": True, "reason": None, "t": 1.5
    }  # fmt: skip
    assert presence_body(Presence.ONLINE, "robot", "s1") == {
        "state": "ONLINE", "kind": "robot", "session": "s1"
    }  # fmt: skip
    assert heartbeat_body(5, 1, 2, 3) == {"uptime_ms": 5, "sent": 1, "received": 2, "dropped": 3}


@pytest.mark.parametrize(
    ("kind", "typ"),
    [
        ("presence", PresenceBody),
        ("heartbeat", HeartbeatBody),
        ("behaviour.execute", ExecuteCommand),
        ("behaviour.renew", RenewCommand),
        ("behaviour.cancel|pause|resume", CommandRef),
    ],
)
def test_protocol_md_tables_match_the_types(kind: str, typ: type) -> None:
    assert set(keys(braces(body_of(DOCS / "protocol.md", kind)))) == fields(typ)


def test_protocol_md_progress_body_matches_the_type() -> None:
    text = (DOCS / "protocol.md").read_text()
    at = text.index("`<driver>/progress`")
    assert set(keys(braces(text, at))) == fields(Progress)


def test_a_will_after_the_same_sessions_goodbye_is_not_a_crash() -> None:
    """amqtt can publish a client's Will in a race with its clean DISCONNECT: a member
    that said OFFLINE stays OFFLINE when a Will of the same session follows, while a
    Will of a later session (the agent came back and then vanished) counts."""
    view = TeamView("me")
    online = {"state": "ONLINE", "kind": "robot", "session": "s1"}
    assert view.apply_presence("pr2", online, 1) == (Presence.UNKNOWN, Presence.ONLINE)
    assert view.apply_presence("pr2", {"state": "OFFLINE", "session": "s1"}, 2) == (
        Presence.ONLINE,
        Presence.OFFLINE,
    )
    assert view.apply_presence("pr2", {"state": "CONNECTION_BROKEN", "session": "s1"}, 3) is None
    assert view.get("pr2").presence is Presence.OFFLINE
    # the same agent back in a new process, then gone without a goodbye: a crash
    view.apply_presence("pr2", {**online, "session": "s2"}, 4)
    view.apply_presence("pr2", {"state": "OFFLINE", "session": "s2"}, 5)
    broken = view.apply_presence("pr2", {"state": "CONNECTION_BROKEN", "session": "s3"}, 6)
    assert broken == (Presence.OFFLINE, Presence.CONNECTION_BROKEN)
