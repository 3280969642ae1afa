"""Typed wire bodies: a body with one field of the wrong type, or one required field
left out, is rejected by its decoder with the protocol's typed error (never another
exception), and hostile bodies never crash a decoder."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec import inspect as mi

from teamtree.agents.allocation.wire import (
    SCHEDULE,
    SOLVE,
    BadRequest,
    GeneralForm,
    KittingForm,
    Options,
    Request,
    ScheduleForm,
    decode,
)
from teamtree.agents.capability.favor_wire import (
    LEASE_BODIES,
    FavorWireError,
    RequestWire,
    message_from_wire,
    message_to_wire,
    request_from_wire,
    request_to_wire,
)
from teamtree.agents.treeprotocol.peer_wire import (
    ClaimWire,
    PeerWireError,
    ReplyWire,
    SnapshotWire,
    TransitionWire,
    claim_from_wire,
    claim_to_wire,
    reply_from_wire,
    reply_to_wire,
    snapshot_from_wire,
    snapshot_to_wire,
    transition_from_wire,
)
from teamtree.hardware import make_robot
from teamtree.planners.capability import (
    JOBS,
    FavorAccept,
    FavorGrant,
    FavorReject,
    FavorRelease,
    FavorRequest,
    FavorRevoke,
    HelperStatus,
    Offer,
    PassiveMatcher,
    WorkingMode,
)
from teamtree.planners.tasktree import (
    Claim,
    ClaimReply,
    NodeReport,
    NodeStatus,
    PeerState,
    Snapshot,
)
from tests.test_wire import bodies

STAMP = (1_700_000_000_000, 3, "pr2")
OFFER = Offer(make_robot("O1", "o1"), fits_req=True)


def _lease(kind: str) -> dict[str, Any]:
    msg = {
        "favor.grant": FavorGrant("r#1", "m1", "o1", OFFER),
        "favor.reject": FavorReject("r#1", "m1", "o1", "late"),
        "favor.accept": FavorAccept("r#1", "m1", "o1", WorkingMode.ASSEMBLY),
        "favor.release": FavorRelease("r#1", "m1", "o1", "done"),
        "favor.revoke": FavorRevoke("r#1", "m1", "o1", "battery"),
        "favor.status": HelperStatus("r#1", "m1", "o1", 0.5),
    }[kind]
    return message_to_wire(msg)[1]


def _favor_request() -> dict[str, Any]:
    q = PassiveMatcher().query(make_robot("M", "m1"), JOBS["job1"])
    return request_to_wire(FavorRequest("m1:j1#1", "m1", q, 2, 10.0, ("m1",)), ["o1"], 5_000)


KITTING = {"form": "kitting", "states": ["initial"] * 20, "p_follow": 0.5, "p_error": 0.1}
GENERAL = {"tasks": ["a", "b"], "agents": ["h", "r"], "cost": [[1, 2], [3, None]]}
SCHEDULE_ONLY = {"tasks": [{"id": "a", "agent": "r", "duration": 1.0}]}


def _allocation(kind: str, typ: type) -> Callable[[Any], Any]:
    def run(body: Any) -> Any:
        return decode(body, typ, "problem")

    return run


#: message kind -> (its Struct, a valid body, its decoder, the typed error)
MESSAGES: dict[str, tuple[type, dict[str, Any], Callable[[Any], Any], type[Exception]]] = {
    "node.claim": (
        ClaimWire,
        claim_to_wire(Claim("c1", "n", "pr2", STAMP, 0.5, 1)),
        claim_from_wire,
        PeerWireError,
    ),
    "node.claim_reply": (
        ReplyWire,
        reply_to_wire(
            ClaimReply("c1", "n", "pr2", "b", (NodeReport("n", PeerState.WORKING, "b", STAMP),))
        ),
        reply_from_wire,
        PeerWireError,
    ),
    "node.transition": (
        TransitionWire,
        {"node": "n", "agent": "pr2", "status": NodeStatus.DONE.value, "stamp": list(STAMP)},
        transition_from_wire,
        PeerWireError,
    ),
    "node.snapshot": (
        SnapshotWire,
        snapshot_to_wire(Snapshot("pr2", STAMP, ("x",), ("y",))),
        snapshot_from_wire,
        PeerWireError,
    ),
    "favor.request": (
        RequestWire,
        _favor_request(),
        lambda body: request_from_wire(body, 0.0, 0),
        FavorWireError,
    ),
    **{
        kind: (typ, _lease(kind), lambda body, k=kind: message_from_wire(k, body), FavorWireError)
        for kind, typ in LEASE_BODIES.items()
    },
    "allocation.request": (
        Request,
        {"problem": GENERAL, "options": {"solver": "highs"}},
        _allocation(SOLVE, Request),
        BadRequest,
    ),
    "allocation.options": (Options, {"solver": "auto"}, _allocation(SOLVE, Options), BadRequest),
    "allocation.kitting": (KittingForm, KITTING, _allocation(SOLVE, KittingForm), BadRequest),
    "allocation.general": (GeneralForm, GENERAL, _allocation(SOLVE, GeneralForm), BadRequest),
    "allocation.schedule": (
        ScheduleForm,
        SCHEDULE_ONLY,
        _allocation(SCHEDULE, ScheduleForm),
        BadRequest,
    ),
}

# -- which plain values a declared type could accept (conservatively: "maybe") -----------


def _may_accept(info: mi.Type, value: Any) -> bool:
    if isinstance(info, mi.Metadata):
        return _may_accept(info.type, value)
    if isinstance(info, mi.AnyType):
        return True
    if isinstance(info, mi.UnionType):
        return any(_may_accept(t, value) for t in info.types)
    if isinstance(info, mi.NoneType):
        return value is None
    if isinstance(value, bool):
        return isinstance(info, mi.BoolType)
    checks: list[tuple[type, tuple[type, ...]]] = [
        (mi.StrType, (str,)),
        (mi.IntType, (int,)),
        (mi.FloatType, (int, float)),
        (mi.BoolType, (bool,)),
        (mi.ListType, (list, tuple)),
        (mi.TupleType, (list, tuple)),
        (mi.DictType, (dict,)),
        (mi.StructType, (dict,)),
        (mi.LiteralType, (str, int)),
        (mi.EnumType, (str, int)),
    ]
    for kind, accepted in checks:
        if isinstance(info, kind):
            return isinstance(value, accepted)
    return True  # another type: treat as maybe (the value is not used as a wrong one)


def _fields(typ: type) -> list[mi.Field]:
    info = mi.type_info(typ)
    assert isinstance(info, mi.StructType)
    return list(info.fields)


plain = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


@pytest.mark.parametrize("kind", sorted(MESSAGES))
def test_valid_examples_decode(kind: str) -> None:
    _, body, run, _ = MESSAGES[kind]
    run(body)


@pytest.mark.parametrize("kind", sorted(MESSAGES))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_wrong_typed_field_is_rejected_with_the_typed_error(kind: str, data: Any) -> None:
    typ, body, run, error = MESSAGES[kind]
    field = data.draw(st.sampled_from(_fields(typ)), label="field")
    wrong = data.draw(plain.filter(lambda v: not _may_accept(field.type, v)), label="value")
    with pytest.raises(error):
        run({**body, field.encode_name: wrong})


@pytest.mark.parametrize("kind", sorted(MESSAGES))
def test_a_missing_required_field_is_rejected_with_the_typed_error(kind: str) -> None:
    typ, body, run, error = MESSAGES[kind]
    required = [f for f in _fields(typ) if f.required]
    for field in required:
        with pytest.raises(error):
            run({k: v for k, v in body.items() if k != field.encode_name})


@pytest.mark.parametrize("kind", sorted(MESSAGES))
@settings(max_examples=80, deadline=None)
@given(body=bodies)
def test_hostile_bodies_raise_only_the_typed_error(kind: str, body: Any) -> None:
    _, _, run, error = MESSAGES[kind]
    with contextlib.suppress(error):
        run(body)


def test_typed_errors_name_the_field() -> None:
    with pytest.raises(PeerWireError, match=r"\$\.stamp"):
        claim_from_wire({**MESSAGES["node.claim"][1], "stamp": [1, 2]})
    with pytest.raises(FavorWireError, match=r"\$\.query\.method"):
        request_from_wire({**_favor_request(), "query": {"method": 3}}, 0.0, 0)
    with pytest.raises(BadRequest) as err:
        decode({**SCHEDULE_ONLY, "tasks": [{"id": 3}]}, ScheduleForm, "problem")
    assert err.value.field == "problem.tasks[0].id"


def test_encoders_write_the_declared_keys() -> None:
    """What the encoders send is exactly what the Structs declare (byte-compatible keys)."""
    for kind, (typ, body, _, _) in MESSAGES.items():
        if kind.startswith("allocation."):
            continue
        names = {f.encode_name for f in _fields(typ)}
        assert set(body) <= names, kind
        assert msgspec.convert(body, typ, strict=True) is not None
