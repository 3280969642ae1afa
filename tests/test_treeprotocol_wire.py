"""The shared task-tree protocol encodes each body from the Struct it decodes it with
(agents/treeprotocol/): the bytes on the wire are the ones the hand-built maps wrote
(same keys, same order), a body decodes back to what was encoded, and
``node.claim_decided`` has a type its publisher and its readers share.

Randomised with hypothesis (``--hypothesis-seed=N`` replays a run; a failure prints
the example that broke it)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.treeprotocol.decided_wire import (
    ClaimDecidedWire,
    claim_decided_from_wire,
    claim_decided_to_wire,
    lost_claim,
)
from teamtree.agents.treeprotocol.peer_wire import (
    LeafSnapshotWire,
    LeafTransitionWire,
    PeerWireError,
    TransitionWire,
    UnitTransitionWire,
    claim_to_wire,
    interest_ack_to_wire,
    reply_to_wire,
    snapshot_to_wire,
    transition_from_wire,
    transition_to_wire,
)
from teamtree.planners import tasktree as tt
from tests.test_wire import bodies

ids = st.text("abcdefgh/0123456789_", min_size=1, max_size=8)
stamps = st.tuples(st.integers(0, 2**45), st.integers(0, 2**20), ids)
potentials = st.floats(0, 1, allow_nan=False)
maybe = st.one_of(st.none(), potentials)


def pack(body: Any) -> bytes:
    return msgspec.msgpack.encode(body)


@settings(max_examples=200, deadline=None)
@given(
    claim=st.builds(tt.Claim, ids, ids, ids, stamps, potentials, st.integers(0, 9)),
    reports=st.lists(
        st.builds(tt.NodeReport, ids, st.sampled_from(tt.PeerState), st.none() | ids,
                  st.none() | stamps, potentials),
        max_size=4,
    ),
)  # fmt: skip
def test_claims_and_replies_go_out_as_the_hand_built_maps_did(
    claim: tt.Claim, reports: list[tt.NodeReport]
) -> None:
    """The maps the robots built by hand before the Structs encoded them, byte for byte."""
    by_hand = {
        "claim_id": claim.claim_id,
        "node": claim.node,
        "claimant": claim.claimant,
        "stamp": list(claim.stamp),
        "potential": claim.potential,
        "round": claim.round,
    }
    assert pack(claim_to_wire(claim)) == pack(by_hand)
    reply = tt.ClaimReply(claim.claim_id, claim.node, claim.claimant, "r", tuple(reports), 3)
    by_hand = {
        "claim_id": reply.claim_id,
        "node": reply.node,
        "claimant": reply.claimant,
        "replier": reply.replier,
        "round": reply.round,
        "reports": [
            {
                "node": r.node,
                "state": r.state.value,
                "agent": r.agent,
                "stamp": list(r.stamp) if r.stamp else None,
                "potential": r.potential,
            }
            for r in reply.reports
        ],
    }
    assert pack(reply_to_wire(reply)) == pack(by_hand)


@settings(max_examples=200, deadline=None)
@given(
    transition=st.builds(tt.Transition, ids, ids, st.sampled_from(tt.NodeStatus), stamps),
    potential=maybe,
    grasp=st.one_of(st.none(), st.floats(0, 100, allow_nan=False)),
)
def test_a_robots_transition_goes_out_as_before_and_comes_back(
    transition: tt.Transition, potential: float | None, grasp: float | None
) -> None:
    t = transition
    body = transition_to_wire(t, potential, grasp)
    by_hand = {
        "node": t.node,
        "agent": t.agent,
        "status": t.status.value,
        "stamp": list(t.stamp),
        "potential": potential,
        "grasp": grasp,
    }
    assert pack(body) == pack(by_hand)
    assert transition_from_wire(msgspec.msgpack.decode(pack(body))) == t
    decoded = msgspec.convert(body, TransitionWire, strict=True)
    assert (decoded.potential, decoded.grasp) == (potential, grasp)


@settings(max_examples=100, deadline=None)
@given(
    transition=st.builds(tt.Transition, ids, ids, st.sampled_from(tt.NodeStatus), stamps),
    step=st.integers(0, 99),
    sim_s=st.floats(0, 1e4, allow_nan=False),
    working=st.booleans(),
    leaves=st.lists(ids, max_size=4),
)
def test_a_multitask_robots_transitions_go_out_as_before_and_decode_as_transitions(
    transition: tt.Transition, step: int, sim_s: float, working: bool, leaves: list[str]
) -> None:
    """A leaf's transition adds its round's keys (a working one its potential, a null
    grasp and the rest); a unit's adds its leaves; the peer rule reads both."""
    t = transition
    head = {"node": t.node, "agent": t.agent, "status": t.status.value, "stamp": list(t.stamp)}
    extra: dict[str, Any] = {"step": step, "sim_s": sim_s}
    if working:
        extra = {"potential": 0.25, "grasp": None, **extra, "duration_s": 2.0,
                 "resources": leaves, "together": leaves[:1], "unit": "u"}  # fmt: skip
    leaf = LeafTransitionWire(t.node, t.agent, t.status, list(t.stamp), **extra)
    assert pack(msgspec.to_builtins(leaf)) == pack(head | extra)
    unit = UnitTransitionWire(t.node, t.agent, t.status, list(t.stamp), leaves=leaves)
    assert pack(msgspec.to_builtins(unit)) == pack(head | {"leaves": leaves})
    for body in (leaf, unit):
        assert transition_from_wire(msgspec.to_builtins(body)) == t
    assert pack(msgspec.convert(head | extra, LeafTransitionWire, strict=True)) == pack(leaf)


def test_snapshots_and_acknowledgements_keep_their_shape() -> None:
    stamp = (5, 1, "pr2")
    leaves = LeafSnapshotWire("mt", list(stamp), ["a"], ["b"], ["c", "d"])
    by_hand = {"agent": "mt", "stamp": [5, 1, "pr2"], "done": ["a"], "skipped": ["b"],
               "working": ["c", "d"]}  # fmt: skip
    assert pack(msgspec.to_builtins(leaves)) == pack(by_hand)
    assert pack(msgspec.convert(by_hand, LeafSnapshotWire, strict=True)) == pack(by_hand)
    snap = snapshot_to_wire(tt.Snapshot("pr2", stamp, ("a",), ("b", "c")))
    assert list(snap) == ["agent", "stamp", "done", "working"]
    assert snap["stamp"] == [5, 1, "pr2"] and snap["working"] == ["b", "c"]
    ack = interest_ack_to_wire(tt.InterestAck("bx", "pr2", stamp, tt.Interest("bx", stamp, ("a",))))
    assert ack == {"agent": "bx", "declarer": "pr2", "stamp": [5, 1, "pr2"],
                   "own": {"agent": "bx", "stamp": [5, 1, "pr2"], "leaves": ["a"]}}  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    claim_id=ids,
    node=ids,
    won=st.booleans(),
    reason=st.text(max_size=12),
    elapsed=st.none() | st.floats(0, 1e6, allow_nan=False),
)
def test_claim_decided_round_trips_and_goes_out_as_before(
    claim_id: str, node: str, won: bool, reason: str, elapsed: float | None
) -> None:
    """``elapsed_ms`` is left out for a claim decided before it went out."""
    by_hand: dict[str, Any] = {"claim_id": claim_id, "node": node, "won": won}
    if elapsed is None:
        body = claim_decided_to_wire(claim_id, node, won, reason)
    else:
        body = claim_decided_to_wire(claim_id, node, won, reason, elapsed)
        by_hand["elapsed_ms"] = elapsed
    assert pack(body) == pack(by_hand | {"reason": reason})
    decoded = claim_decided_from_wire(msgspec.msgpack.decode(pack(body)))
    assert msgspec.to_builtins(decoded) == body
    assert (lost_claim(body) is None) == won


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"node": "n", "won": False, "reason": "r"}, "claim_id"),
        ({"claim_id": "c", "node": 3, "won": False, "reason": "r"}, r"\$\.node"),
        ({"claim_id": "c", "node": "n", "won": "no", "reason": "r"}, r"\$\.won"),
        ({"claim_id": "c", "node": "n", "won": False, "reason": "r", "elapsed_ms": "1"},
         r"\$\.elapsed_ms"),
        ({"claim_id": "c", "node": "n", "won": False}, "reason"),
    ],
)  # fmt: skip
def test_a_malformed_claim_decided_names_the_field(body: dict[str, Any], field: str) -> None:
    with pytest.raises(PeerWireError, match=field):
        claim_decided_from_wire(body)
    assert lost_claim(body) is None  # an observer shows nothing for it


@settings(max_examples=200, deadline=None)
@given(body=bodies)
def test_any_body_is_a_claim_decided_or_a_peer_wire_error(body: Any) -> None:
    try:
        decoded = claim_decided_from_wire(body)
    except PeerWireError:
        return
    assert isinstance(decoded, ClaimDecidedWire)
