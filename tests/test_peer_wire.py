"""The peer rule's messages on the wire (agents.treeprotocol.peer_wire)."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.treeprotocol.peer_wire import (
    MAX_BATCHED_ACKS,
    claim_from_wire,
    claim_to_wire,
    interest_ack_from_wire,
    interest_ack_to_wire,
    interest_acks_from_wire,
    interest_acks_to_wire,
    interest_from_wire,
    interest_to_wire,
    reply_from_wire,
    reply_to_wire,
    snapshot_from_wire,
    snapshot_to_wire,
    transition_from_wire,
    working_leaves,
)
from teamtree.planners.tasktree import (
    Claim,
    ClaimReply,
    Interest,
    InterestAck,
    NodeReport,
    PeerState,
    Snapshot,
)
from tests.test_wire import bodies

STAMP = (1_700_000_000_000, 3, "pr2")


def test_claims_and_replies_round_trip() -> None:
    claim = Claim("pr2@1#1", "task-o1", "pr2", STAMP, 0.5, round=2)
    assert claim_from_wire(claim_to_wire(claim)) == claim
    reply = ClaimReply(
        "pr2@1#1", "task-o1", "pr2", "baxter",
        (NodeReport("task-o1", PeerState.NONE), NodeReport("x", PeerState.WORKING, "b", STAMP)),
        round=2,
    )  # fmt: skip
    assert reply_from_wire(reply_to_wire(reply)) == reply


def test_interest_and_its_acknowledgement_round_trip() -> None:
    mine = Interest("pr2", STAMP, ("root/0", "root/1"))
    assert interest_from_wire(interest_to_wire(mine)) == mine
    own = Interest("baxter", (1, 0, "baxter"), ())
    for ack in (InterestAck("baxter", "pr2", STAMP, own), InterestAck("baxter", "pr2", STAMP)):
        assert interest_ack_from_wire(interest_ack_to_wire(ack)) == ack


def test_an_acknowledgement_cannot_speak_for_another_members_interest() -> None:
    body = interest_ack_to_wire(
        InterestAck("baxter", "pr2", STAMP, Interest("pr2", STAMP, ("root/0",)))
    )
    with pytest.raises(ValueError, match=r"own\.agent"):
        interest_ack_from_wire(body)


stamps = st.tuples(st.integers(0, 2**53), st.integers(0, 2**16), st.sampled_from(["a", "b", "c"]))


@settings(max_examples=200)
@given(
    st.lists(st.tuples(st.sampled_from(["r1", "r2", "r3", "r4"]), stamps), min_size=1),
    st.one_of(st.none(), st.lists(st.sampled_from(["x", "y", "z"]), unique=True)),
)
def test_a_batch_of_acknowledgements_gives_each_declarer_its_latest_entry(entries, own) -> None:
    """Each declarer named in a ``node.interest_acks`` reads the acknowledgement of its
    latest declaration listed, with the batch's ``own`` (the last one's); a member not
    named reads none."""
    mine = None if own is None else Interest("bx", STAMP, tuple(own))
    acks = [InterestAck("bx", declarer, stamp, mine) for declarer, stamp in entries]
    body = interest_acks_to_wire(acks)
    for declarer in ("r1", "r2", "r3", "r4"):
        listed = [stamp for d, stamp in entries if d == declarer]
        got = interest_acks_from_wire(body, declarer)
        if not listed:
            assert got is None
        else:
            assert got == InterestAck("bx", declarer, max(listed), mine)


def test_a_malformed_batch_of_acknowledgements_is_refused_naming_the_field() -> None:
    ack = InterestAck("bx", "pr2", STAMP, Interest("bx", STAMP, ("a",)))
    body = interest_acks_to_wire([ack])
    for bad, field in (
        ({**body, "acks": []}, r"\$\.acks"),
        ({**body, "acks": body["acks"] * (MAX_BATCHED_ACKS + 1)}, r"\$\.acks"),
        ({**body, "acks": [{"declarer": "pr2", "stamp": [1, 2]}]}, r"\$\.acks\[0\]\.stamp"),
        ({**body, "own": {**body["own"], "agent": "pr2"}}, r"own\.agent"),
    ):
        with pytest.raises(ValueError, match=field):
            interest_acks_from_wire(bad, "other")  # refused whoever reads it
    with pytest.raises(ValueError, match="more than one agent"):
        interest_acks_to_wire([ack, InterestAck("pr2", "bx", STAMP)])


@pytest.mark.parametrize(
    ("working", "wire"),
    [((), None), (("a",), "a"), (("a", "b"), ["a", "b"])],
)
def test_snapshot_working_keeps_seed_000s_form_for_one_leaf(working, wire) -> None:
    snap = Snapshot("pr2", STAMP, ("x",), working)
    body = snapshot_to_wire(snap)
    assert body["working"] == wire
    assert snapshot_from_wire(body) == snap


def test_working_leaves_rejects_what_is_not_leaf_ids() -> None:
    assert working_leaves(None) == () and working_leaves("a") == ("a",)
    for bad in (3, ["a", 3], {"a": 1}):
        with pytest.raises(ValueError, match="working"):
            working_leaves(bad)


KEYS = ["claim_id", "node", "claimant", "stamp", "potential", "round", "replier", "reports",
        "agent", "status", "done", "working", "leaves", "declarer", "own"]  # fmt: skip
shaped = st.dictionaries(st.sampled_from(KEYS), bodies, max_size=len(KEYS)) | st.fixed_dictionaries(
    {k: bodies for k in KEYS}
)


@settings(max_examples=300, deadline=None)
@given(body=bodies | shaped)
def test_decoders_raise_only_the_errors_callers_catch(body) -> None:
    """Hostile bodies: every decoder fails with KeyError, TypeError or ValueError (the
    agent drops and logs them), never anything else."""
    decoders = (
        claim_from_wire,
        reply_from_wire,
        snapshot_from_wire,
        transition_from_wire,
        interest_from_wire,
        interest_ack_from_wire,
    )
    for decode in decoders:
        with contextlib.suppress(KeyError, TypeError, ValueError):
            decode(body)
