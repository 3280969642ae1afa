"""The peer rule as a state machine (seed 000 §2.3, Figs. 7, 8; docs/protocol.md "Claiming a node")."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any, ClassVar

import pytest
from msgspec.structs import replace as replace_struct

from teamtree.planners.tasktree import (
    AbortBehaviour,
    BehaviourFinished,
    Claim,
    ClaimDecided,
    ClaimReply,
    ConnectionChanged,
    CrashSpec,
    NetworkModel,
    NodeStatus,
    PauseBehaviour,
    PeerState,
    PotentialsChanged,
    PresenceChanged,
    PublishClaim,
    PublishReply,
    PublishSnapshot,
    PublishTransition,
    ResumeBehaviour,
    SimConfig,
    Snapshot,
    StartBehaviour,
    TaskController,
    Tick,
    Transition,
    Want,
    check_invariants,
    conflict_set,
    parse_tree,
    simulate,
)

FIG2 = "AND(THEN(cup, AND(sugar, tea_pot)), THEN(sandwich, OR(orange, apple), burger))"


class Team:
    """Hand-routed controllers: messages wait in ``outbox`` until a test delivers them."""

    def __init__(
        self,
        tree_text: str,
        pots: dict[str, dict[str, float]],
        options: dict[str, dict[str, Any]] | None = None,
    ):
        self.tree = parse_tree(tree_text)
        ids = list(pots)
        options = options or {}
        self.ctl = {
            r: TaskController(
                self.tree,
                r,
                online_peers=set(ids) - {r},
                potentials={self.tree.find(k): v for k, v in p.items()},
                **options.get(r, {}),
            )
            for r, p in pots.items()
        }
        self.outbox: list[tuple[str, str, object]] = []  # (from, to, message)
        self.log: list[tuple[str, object]] = []
        self.clock = itertools.count(100)

    def now(self, r: str) -> tuple[int, int, str]:
        return (next(self.clock), 0, r)

    def feed(self, r: str, event: object) -> list[object]:
        actions = self.ctl[r].handle(event, self.now(r))  # type: ignore[arg-type]
        for a in actions:
            self.log.append((r, a))
            match a:
                case PublishClaim(claim=c, to=to):
                    self.outbox += [(r, q, c) for q in self.ctl if q != r and to in (None, q)]
                case PublishReply(reply=rep):
                    self.outbox.append((r, rep.claimant, rep))
                case PublishTransition(transition=t):
                    self.outbox += [(r, q, t) for q in self.ctl if q != r]
        return actions

    def deliver_all(self, order: str = "fifo") -> None:
        while self.outbox:
            msg = self.outbox.pop(-1 if order == "lifo" else 0)
            self.feed(msg[1], msg[2])

    def started(self, r: str) -> list[str]:
        return [a.node for who, a in self.log if who == r and isinstance(a, StartBehaviour)]


def test_fig7_different_subtasks_both_start() -> None:
    team = Team(FIG2, {"r1": {"sandwich": 2.0}, "r2": {"cup": 2.0}})
    team.feed("r1", Tick())
    team.feed("r2", Tick())
    assert team.started("r1") == team.started("r2") == []  # waiting for peer status
    team.deliver_all()
    assert team.started("r1") == [team.tree.find("sandwich")]
    assert team.started("r2") == [team.tree.find("cup")]


@pytest.mark.parametrize("order", ["fifo", "lifo"])
def test_fig8_same_subtask_earliest_wins_loser_picks_another(order: str) -> None:
    team = Team(FIG2, {"r1": {"sandwich": 2.0}, "r2": {"sandwich": 2.0, "cup": 1.5}})
    team.feed("r1", Tick())  # earlier stamp
    team.feed("r2", Tick())
    team.deliver_all(order)
    sandwich, cup = team.tree.find("sandwich"), team.tree.find("cup")
    assert team.started("r1") == [sandwich]
    assert team.started("r2") == []
    lost = [a for who, a in team.log if who == "r2" and isinstance(a, ClaimDecided)]
    assert len(lost) == 1 and not lost[0].won
    assert team.ctl["r2"].activations()[sandwich].potential == 0.0  # lowered (step 5)
    team.feed("r2", Tick())  # step 6: another node gets the higher activation
    team.deliver_all(order)
    assert team.started("r2") == [cup]


def test_claim_reply_reports_state_and_duplicates_change_nothing() -> None:
    tree = parse_tree(FIG2)
    ctl = TaskController(tree, "b", online_peers={"a"}, potentials={tree.find("orange"): 3.0})
    ctl.handle(Transition(tree.find("sandwich"), "a", NodeStatus.DONE, (1, 0, "a")), (2, 0, "b"))
    ctl.handle(Tick(), (3, 0, "b"))  # b claims orange at (3, 0)
    assert ctl.pending_claim is not None and ctl.pending_claim.node == tree.find("orange")
    # a claims apple (OR sibling) later: b reports its own pending claim on orange
    apple = Claim("a#1", tree.find("apple"), "a", (5, 0, "a"))
    (reply,) = ctl.handle(apple, (6, 0, "b"))
    assert isinstance(reply, PublishReply)
    assert reply.reply.reports[0].node == tree.find("apple")
    assert reply.reply.reports[0].state is PeerState.NONE
    assert [(r.node, r.state, r.stamp) for r in reply.reply.reports[1:]] == [
        (tree.find("orange"), PeerState.CLAIMED, (3, 0, "b"))
    ]
    # an earlier claim on the sibling beats b's own: b asks a again (round 1), since
    # a's first answer may predate a's claim
    mine = ctl.pending_claim
    early = Claim("a#0", tree.find("apple"), "a", (1, 5, "a"))
    out = ctl.handle(early, (7, 0, "b"))
    assert out[1:] == [PublishClaim(replace_struct(mine, round=1), to="a")]
    # the duplicate gets the same kind of answer and changes nothing
    again = ctl.handle(early, (8, 0, "b"))
    assert [type(a) for a in again] == [PublishReply]
    # a round-0 answer no longer counts; the round-1 answer reports a's claim: b loses
    none0 = ClaimReply(mine.claim_id, mine.node, "b", "a", (), round=0)
    assert not any(
        isinstance(a, (StartBehaviour, ClaimDecided)) for a in ctl.handle(none0, (9, 0, "b"))
    )
    from teamtree.planners.tasktree import NodeReport

    rep1 = ClaimReply(
        mine.claim_id,
        mine.node,
        "b",
        "a",
        (
            NodeReport(mine.node, PeerState.NONE),
            NodeReport(early.node, PeerState.CLAIMED, "a", early.stamp),
        ),
        round=1,
    )
    out = ctl.handle(rep1, (10, 0, "b"))
    assert any(isinstance(a, ClaimDecided) and not a.won for a in out)
    assert ctl.pending_claim is None


def test_reply_from_every_peer_online_at_decision_time() -> None:
    tree = parse_tree("AND(a, b)")
    ctl = TaskController(tree, "x", online_peers={"y"})
    ctl.handle(Tick(), (1, 0, "x"))
    claim = ctl.pending_claim
    assert claim is not None
    # z comes online before y answers: the claim is re-sent and z's answer is needed
    out = ctl.handle(PresenceChanged("z", True), (2, 0, "x"))
    assert out == [PublishClaim(claim, to="z")]
    none = ClaimReply(claim.claim_id, claim.node, "x", "y", ())
    assert not any(isinstance(a, StartBehaviour) for a in ctl.handle(none, (3, 0, "x")))
    # duplicate reply from y still does not count for z
    assert not any(isinstance(a, StartBehaviour) for a in ctl.handle(none, (4, 0, "x")))
    # z goes offline (Last Will): no longer needed
    out = ctl.handle(PresenceChanged("z", False), (5, 0, "x"))
    assert StartBehaviour(claim.node) in out


def test_working_beats_any_claim_even_an_earlier_one() -> None:
    tree = parse_tree("AND(a, b)")
    ctl = TaskController(tree, "x", online_peers={"y"})
    ctl.handle(Tick(), (10, 0, "x"))
    claim = ctl.pending_claim
    assert claim is not None
    from teamtree.planners.tasktree import NodeReport

    rep = ClaimReply(
        claim.claim_id,
        claim.node,
        "x",
        "y",
        (NodeReport(claim.node, PeerState.WORKING, "y", (50, 0, "y")),),
    )
    out = ctl.handle(rep, (11, 0, "x"))
    assert any(isinstance(a, ClaimDecided) and not a.won for a in out)
    assert ctl.statuses()[claim.node] is NodeStatus.INACTIVE  # y works on it


def test_last_will_releases_the_node_for_another_robot() -> None:
    tree = parse_tree("AND(a, b)")
    ctl = TaskController(tree, "x", online_peers={"y"}, potentials={"root/0": 5.0})
    ctl.handle(Transition("root/0", "y", NodeStatus.WORKING, (1, 0, "y")), (2, 0, "x"))
    assert ctl.statuses()["root/0"] is NodeStatus.INACTIVE
    ctl.handle(PresenceChanged("y", False), (3, 0, "x"))
    assert ctl.statuses()["root/0"] is NodeStatus.ACTIVE
    out = ctl.handle(Tick(), (4, 0, "x"))
    assert StartBehaviour("root/0") in out  # nobody else online: decided at once
    # a stale working transition from the dead robot changes nothing
    ctl.handle(Transition("root/0", "y", NodeStatus.WORKING, (2, 5, "y")), (5, 0, "x"))
    assert ctl.my_working == "root/0"


def test_late_joiner_adopts_snapshots_before_claiming() -> None:
    tree = parse_tree("THEN(a, b, c)")
    j = TaskController(tree, "j", online_peers={"p", "q"}, await_snapshots=True)
    assert j.handle(Tick(), (1, 0, "j")) == []  # not synced: no claim
    j.handle(Snapshot("p", (5, 0, "p"), ("root/0",), "root/1"), (6, 0, "j"))
    assert j.handle(Tick(), (7, 0, "j")) == []  # still waiting for q
    j.handle(PresenceChanged("q", False), (8, 0, "j"))  # q left: not awaited any more
    assert j.synced
    assert j.statuses() == {
        "root": NodeStatus.ACTIVE,
        "root/0": NodeStatus.DONE,
        "root/1": NodeStatus.INACTIVE,  # p is working on it
        "root/2": NodeStatus.INACTIVE,
    }
    assert j.handle(Tick(), (9, 0, "j")) == []  # nothing it may do


def test_fencing_pause_on_disconnect_and_reclaim_on_reconnect() -> None:
    tree = parse_tree("AND(a, b)")
    x = TaskController(tree, "x", potentials={"root/0": 5.0})
    assert StartBehaviour("root/0") in x.handle(Tick(), (1, 0, "x"))
    assert x.handle(ConnectionChanged(False), (2, 0, "x")) == [PauseBehaviour("root/0")]
    assert x.handle(Tick(), (3, 0, "x")) == []
    x.handle(ConnectionChanged(True, frozenset({"y"})), (4, 0, "x"))
    assert x.handle(Tick(), (5, 0, "x")) == []  # waits for y's snapshot
    x.handle(Snapshot("y", (4, 0, "y"), (), None), (6, 0, "x"))
    out = x.handle(Tick(), (7, 0, "x"))
    (claim,) = [a.claim for a in out if isinstance(a, PublishClaim)]
    assert claim.node == "root/0"
    out = x.handle(ClaimReply(claim.claim_id, "root/0", "x", "y", ()), (8, 0, "x"))
    assert ResumeBehaviour("root/0") in out


def test_a_paused_leaf_that_finishes_during_its_reclaim_stays_done() -> None:
    """The driver finishes the paused behaviour while its re-claim is out: the re-claim
    is dropped, so a late reply neither aborts it nor publishes it inactive."""
    tree = parse_tree("AND(a, b)")
    x = TaskController(tree, "x", potentials={"root/0": 5.0})
    x.handle(Tick(), (1, 0, "x"))
    x.handle(ConnectionChanged(False), (2, 0, "x"))
    x.handle(ConnectionChanged(True, frozenset({"y"})), (4, 0, "x"))
    x.handle(Snapshot("y", (4, 0, "y"), (), None), (5, 0, "x"))
    (claim,) = [a.claim for a in x.handle(Tick(), (6, 0, "x")) if isinstance(a, PublishClaim)]
    out = x.handle(BehaviourFinished("root/0"), (7, 0, "x"))
    assert [a.transition.status for a in out if isinstance(a, PublishTransition)] == [
        NodeStatus.DONE
    ]
    assert x.pending_claim is None
    late = x.handle(ClaimReply(claim.claim_id, "root/0", "x", "y", ()), (8, 0, "x"))
    assert not [a for a in late if isinstance(a, AbortBehaviour | PublishTransition)]
    assert "root/0" in x.done


def test_activations_follow_every_change_despite_the_cache() -> None:
    tree = parse_tree("THEN(a, OR(b, c))")
    x = TaskController(tree, "x", potentials={"root/0": 1.0})
    before = x.activations()
    assert x.activations() is before  # nothing changed: cached
    x.handle(Transition("root/0", "y", NodeStatus.DONE, (1, 0, "y")), (2, 0, "x"))
    after = x.activations()
    assert after["root/0"].satisfied and after["root/1"].level > 0
    x.handle(PotentialsChanged({"root/1/0": 0.0, "root/1/1": 2.0}), (3, 0, "x"))
    assert x.activations()["root/1/0"].potential == 0.0
    assert x.activations()["root/1/1"].potential == 2.0


def test_fencing_abandons_work_taken_meanwhile() -> None:
    tree = parse_tree("AND(a, b)")
    x = TaskController(tree, "x", potentials={"root/0": 5.0})
    x.handle(Tick(), (1, 0, "x"))
    x.handle(ConnectionChanged(False), (2, 0, "x"))
    x.handle(ConnectionChanged(True, frozenset({"y"})), (9, 0, "x"))
    out = x.handle(Snapshot("y", (8, 0, "y"), (), "root/0"), (10, 0, "x"))
    assert AbortBehaviour("root/0", "taken by y") in out
    assert x.my_working is None
    assert any(isinstance(a, PublishSnapshot) for a in out)


def test_finished_publishes_done_and_failed_releases() -> None:
    tree = parse_tree("AND(a, b)")
    x = TaskController(tree, "x", potentials={"root/0": 5.0})
    x.handle(Tick(), (1, 0, "x"))
    out = x.handle(BehaviourFinished("root/0", succeeded=False), (2, 0, "x"))
    assert PublishTransition(Transition("root/0", "x", NodeStatus.INACTIVE, (2, 0, "x"))) in out
    out = x.handle(Tick(), (3, 0, "x"))
    assert StartBehaviour("root/1") in out  # root/0 is inhibited for a while
    out = x.handle(BehaviourFinished("root/1"), (4, 0, "x"))
    assert PublishTransition(Transition("root/1", "x", NodeStatus.DONE, (4, 0, "x"))) in out


def test_conflict_set_covers_or_alternatives() -> None:
    tree = parse_tree("THEN(s, OR(THEN(a, b), c, OR(d, e)))")
    assert conflict_set(tree, tree.find("a")) == {tree.find(k) for k in ("a", "c", "d", "e")}
    assert conflict_set(tree, tree.find("d")) == {tree.find(k) for k in ("d", "e", "a", "b", "c")}
    assert conflict_set(tree, tree.find("s")) == {tree.find("s")}


@pytest.mark.parametrize("seed", range(6))
def test_crash_of_working_robot_completed_by_another_exactly_once(seed: int) -> None:
    tree = parse_tree(FIG2)
    cfg = SimConfig(
        robots=("pr2", "baxter", "r3"),
        seed=seed,
        network=NetworkModel(max_delay=0.05, duplicate_p=0.2, reorder=True),
        crashes=(CrashSpec("pr2", on_start=1, fraction=0.2 + 0.1 * seed),),
        potentials={  # pr2 is keenest on everything, so it surely starts something
            r: {leaf: (2.0 if r == "pr2" else 1.0) for leaf in tree.leaves}
            for r in ("pr2", "baxter", "r3")
        },
    )
    res = simulate(tree, cfg)
    assert check_invariants(tree, res) == [], res.summary()
    assert res.crashed == ("pr2",), res.summary()
    (lost,) = [e for e in res.executions if e.robot == "pr2" and e.aborted]
    finished = [e for e in res.executions if e.node == lost.node and e.completed]
    assert len(finished) == 1, res.summary()
    assert finished[0].robot != "pr2" and finished[0].start >= lost.end, res.summary()


# ------------------------------------------------------------------ several leaves at once


def _refused(out: list[object]) -> str:
    """The reason of the one lost ``ClaimDecided`` in ``out`` (nothing published)."""
    assert len(out) == 1, out
    (decided,) = out
    assert isinstance(decided, ClaimDecided) and not decided.won, out
    assert decided.reason
    return decided.reason


def test_capacity_two_works_two_leaves_of_an_and_at_once() -> None:
    team = Team(
        "AND(a, b, c)",
        {"x": {"a": 3.0, "b": 2.0, "c": 1.0}, "y": {}},
        {"x": {"capacity": 2}, "y": {"auto_select": False}},
    )
    a, b, c = (team.tree.find(k) for k in "abc")
    x, y = team.ctl["x"], team.ctl["y"]
    team.feed("x", Tick())
    team.deliver_all()
    team.feed("x", Tick())  # still working a: claims b
    assert x.pending_claim is not None and x.pending_claim.node == b
    team.deliver_all()
    assert team.started("x") == [a, b]
    assert list(x.mine) == [a, b] and x.my_working == a
    assert x.snapshot((50, 0, "x")).working == (a, b)
    assert x.statuses()[a] is x.statuses()[b] is NodeStatus.WORKING
    assert x.statuses()[c] is NodeStatus.ACTIVE
    assert {n: w[0] for n, w in y.working.items()} == {a: "x", b: "x"}
    assert team.feed("x", Tick()) == []  # at capacity: no third claim
    team.feed("x", BehaviourFinished(a))
    team.feed("x", Tick())
    team.deliver_all()
    assert team.started("x") == [a, b, c]
    assert x.snapshot((60, 0, "x")).working == (b, c)
    assert team.started("y") == []  # auto_select=False: never claims by itself


def test_want_claims_what_it_asks_for_and_refuses_at_once_when_it_cannot() -> None:
    tree = parse_tree("AND(a, b, c, OR(d, e))")
    a, b, c, d = (tree.find(k) for k in "abcd")
    x = TaskController(tree, "x", online_peers={"y"}, capacity=2, auto_select=False)
    x.handle(Transition(a, "y", NodeStatus.WORKING, (1, 0, "y")), (2, 0, "x"))
    assert "taken by a peer" in _refused(x.handle(Want(a), (3, 0, "x")))
    assert _refused(x.handle(Want("no/such/node"), (4, 0, "x"))) == "not a leaf of this tree"
    assert _refused(x.handle(Want(tree.root.id), (5, 0, "x"))) == "not a leaf of this tree"
    out = x.handle(Want(b, potential=0.7), (6, 0, "x"))
    (claim,) = [act.claim for act in out if isinstance(act, PublishClaim)]
    assert out == [PublishClaim(claim)]  # y must answer first
    assert (claim.node, claim.potential) == (b, 0.7)
    reason = _refused(x.handle(Want(c), (7, 0, "x")))
    assert reason == "another claim is pending"
    assert x.pending_claim == claim  # the pending claim is untouched
    out = x.handle(ClaimReply(claim.claim_id, b, "x", "y", ()), (8, 0, "x"))
    assert StartBehaviour(b) in out
    assert _refused(x.handle(Want(b), (9, 0, "x"))) == "already working on it"
    (claim,) = [
        act.claim for act in x.handle(Want(c), (10, 0, "x")) if isinstance(act, PublishClaim)
    ]
    assert StartBehaviour(c) in x.handle(ClaimReply(claim.claim_id, c, "x", "y", ()), (11, 0, "x"))
    assert list(x.mine) == [b, c]
    assert _refused(x.handle(Want(d), (12, 0, "x"))) == "at capacity"
    decided = x.handle(Want(d), (13, 0, "x"))[0]
    assert isinstance(decided, ClaimDecided)
    assert (decided.claim.node, decided.claim.claimant) == (d, "x")
    assert x.pending_claim is None


def test_auto_select_false_never_claims_on_tick() -> None:
    tree = parse_tree("AND(a, b)")
    x = TaskController(tree, "x", capacity=2, auto_select=False, potentials={"root/0": 9.0})
    assert all(x.handle(Tick(), (t, 0, "x")) == [] for t in range(1, 30))
    out = x.handle(Want("root/1"), (30, 0, "x"))  # alone: decided at once
    assert StartBehaviour("root/1") in out
    x.handle(BehaviourFinished("root/1"), (31, 0, "x"))
    assert all(x.handle(Tick(), (t, 0, "x")) == [] for t in range(32, 60))
    assert x.done == {"root/1"} and not x.mine and x.pending_claim is None


def test_disconnect_pauses_every_leaf_and_reconnect_reclaims_them_one_at_a_time() -> None:
    tree = parse_tree("AND(a, b, c)")
    a, b, c = (tree.find(k) for k in "abc")
    x = TaskController(tree, "x", capacity=2, potentials={a: 5.0, b: 4.0, c: 1.0})
    assert StartBehaviour(a) in x.handle(Tick(), (1, 0, "x"))
    assert StartBehaviour(b) in x.handle(Tick(), (2, 0, "x"))
    assert x.handle(ConnectionChanged(False), (3, 0, "x")) == [
        PauseBehaviour(a),
        PauseBehaviour(b),
    ]
    assert x.paused
    assert x.handle(Tick(), (4, 0, "x")) == []
    assert _refused(x.handle(Want(c), (5, 0, "x"))) == "not connected and synced"
    x.handle(ConnectionChanged(True, frozenset({"y"})), (6, 0, "x"))
    assert x.handle(Tick(), (7, 0, "x")) == []  # waits for y's snapshot
    x.handle(Snapshot("y", (6, 0, "y"), (), None), (8, 0, "x"))
    resumed = []
    for leaf, t in ((a, 10), (b, 20)):
        out = x.handle(Tick(), (t, 0, "x"))
        (claim,) = [act.claim for act in out if isinstance(act, PublishClaim)]
        assert claim.node == leaf  # one re-claim at a time, in the order it won them
        assert x.handle(Tick(), (t + 1, 0, "x")) == []  # no second claim meanwhile
        assert _refused(x.handle(Want(c), (t + 2, 0, "x"))) == "another claim is pending"
        out = x.handle(ClaimReply(claim.claim_id, leaf, "x", "y", ()), (t + 3, 0, "x"))
        assert ResumeBehaviour(leaf) in out and not any(
            isinstance(act, StartBehaviour) for act in out
        )
        resumed.append(leaf)
        assert x.paused == (leaf != b)
    assert resumed == [a, b] and list(x.mine) == [a, b]
    assert x.handle(Tick(), (30, 0, "x")) == []  # at capacity again


def test_reclaim_lost_after_reconnect_aborts_only_that_leaf() -> None:
    tree = parse_tree("AND(a, b, c)")
    a, b = tree.find("a"), tree.find("b")
    x = TaskController(tree, "x", capacity=2, potentials={a: 5.0, b: 4.0})
    x.handle(Tick(), (1, 0, "x"))
    x.handle(Tick(), (2, 0, "x"))
    x.handle(ConnectionChanged(False), (3, 0, "x"))
    x.handle(ConnectionChanged(True, frozenset({"y"})), (9, 0, "x"))
    out = x.handle(Snapshot("y", (8, 0, "y"), (), (b,)), (10, 0, "x"))  # y took b
    assert AbortBehaviour(b, "taken by y") in out
    assert list(x.mine) == [a] and x.paused
    out = x.handle(Tick(), (11, 0, "x"))
    (claim,) = [act.claim for act in out if isinstance(act, PublishClaim)]
    assert claim.node == a
    assert ResumeBehaviour(a) in x.handle(ClaimReply(claim.claim_id, a, "x", "y", ()), (12, 0, "x"))
    assert not x.paused


def test_peer_snapshot_with_two_working_leaves_marks_both() -> None:
    tree = parse_tree("AND(a, b, c)")
    a, b, c = (tree.find(k) for k in "abc")
    x = TaskController(tree, "x", online_peers={"y"})
    x.handle(Snapshot("y", (5, 0, "y"), (), (a, b)), (6, 0, "x"))
    assert x.working == {a: ("y", (5, 0, "y")), b: ("y", (5, 0, "y"))}
    st = x.statuses()
    assert (st[a], st[b], st[c]) == (NodeStatus.INACTIVE, NodeStatus.INACTIVE, NodeStatus.ACTIVE)
    assert "taken by a peer" in _refused(x.handle(Want(b), (7, 0, "x")))
    out = x.handle(Tick(), (8, 0, "x"))
    assert [act.claim.node for act in out if isinstance(act, PublishClaim)] == [c]
    # a newer snapshot without a: y released it
    x.handle(Snapshot("y", (9, 0, "y"), (), (b,)), (10, 0, "x"))
    assert x.working == {b: ("y", (9, 0, "y"))}
    assert x.statuses()[a] is NodeStatus.ACTIVE


def test_snapshot_working_is_normalised_to_a_tuple() -> None:
    stamp = (1, 0, "a")
    assert Snapshot("a", stamp, (), None).working == ()
    assert Snapshot("a", stamp, (), "x").working == ("x",)
    assert Snapshot("a", stamp, (), ["x", "y"]).working == ("x", "y")
    assert Snapshot("a", stamp, ()).working == ()
    assert Snapshot("a", stamp, (), "x") == Snapshot("a", stamp, (), ("x",))


def test_simulated_capacity_two_robot_runs_two_behaviours_and_the_check_counts_them() -> None:
    tree = parse_tree("AND(a, b, c, d)")
    res = simulate(tree, SimConfig(robots=("solo",), seed=3, capacity=2))
    assert check_invariants(tree, res) == [], res.summary()
    ex = res.executions
    overlaps = [
        (e.node, f.node) for i, e in enumerate(ex) for f in ex[:i] if f.end and f.end > e.start
    ]
    assert overlaps, res.summary()  # it did run two at once
    assert all(sum(1 for f in ex[:i] if f.end and f.end > e.start) < 2 for i, e in enumerate(ex))
    errors = check_invariants(tree, replace(res, capacity=1))
    assert errors and all("at once" in e and "capacity 1" in e for e in errors)


@pytest.mark.parametrize("seed", range(4))
def test_crash_of_a_robot_working_two_leaves_releases_both(seed: int) -> None:
    tree = parse_tree("AND(a, b, c, d)")
    robots = ("pr2", "baxter")
    cfg = SimConfig(
        robots=robots,
        seed=seed,
        network=NetworkModel(max_delay=0.02, duplicate_p=0.2, reorder=True),
        duration=(0.6, 1.0),
        crashes=(CrashSpec("pr2", on_start=2, fraction=0.3),),
        potentials={
            r: {leaf: (2.0 if r == "pr2" else 1.0) for leaf in tree.leaves} for r in robots
        },
        capacity=2,
    )
    res = simulate(tree, cfg)
    assert check_invariants(tree, res) == [], res.summary()
    assert res.crashed == ("pr2",), res.summary()
    lost = [e for e in res.executions if e.robot == "pr2" and e.aborted]
    assert len(lost) == 2 and lost[0].end == lost[1].end, res.summary()  # both, at the crash
    for e in lost:
        (finished,) = [f for f in res.executions if f.node == e.node and f.completed]
        assert finished.robot == "baxter" and finished.start >= e.end, res.summary()


def test_a_done_that_died_with_its_robot_may_be_redone() -> None:
    # r0 finishes l0, then crashes 4 ms later (while on l2) before its done transition
    # and snapshot reach the broker (hops up to 0.3 s, Last Will after 0.1 s): nobody
    # can know l0 is done, r1 does it again. That is no double completion.
    tree = parse_tree("AND(AND(l0, THEN(l1)), l2)")
    cfg = SimConfig(
        robots=("r0", "r1"),
        seed=649613042,
        network=NetworkModel(max_delay=0.3, duplicate_p=0.2, reorder=False),
        crashes=(CrashSpec("r0", on_start=2, fraction=0.28),),
        capacity=4,
        time_limit=600.0,
    )
    res = simulate(tree, cfg)
    l0 = tree.find("l0")
    runs = [(e.robot, e.completed, e.unreported) for e in res.executions if e.node == l0]
    assert runs == [("r0", True, True), ("r1", True, False)], res.summary()
    assert check_invariants(tree, res) == [], res.summary()
    told = [replace(e, unreported=False) for e in res.executions]
    assert check_invariants(tree, replace(res, executions=told)) == [
        f"{l0} completed 2 times by ['r0', 'r1']"
    ]


class _ScriptedController:
    """Stands in for ``TaskController`` in the simulator: returns scripted actions per tick."""

    script: ClassVar[dict[int, list[object]]] = {}

    def __init__(self, tree: object, me: str, **_kw: object) -> None:
        self.me = me
        self.ticks = 0
        self.mission_done = False
        self.pending_claim = None

    def snapshot(self, now: tuple[int, int, str]) -> Snapshot:
        return Snapshot(self.me, now, ())

    def handle(self, event: object, now: tuple[int, int, str]) -> list[object]:
        if not isinstance(event, Tick):
            return []
        self.ticks += 1
        return list(self.script.get(self.ticks, []))


def test_simulator_stops_only_the_execution_of_the_paused_or_aborted_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from teamtree.planners.tasktree import peer_sim

    monkeypatch.setattr(peer_sim, "TaskController", _ScriptedController)
    monkeypatch.setattr(
        _ScriptedController,
        "script",
        {
            1: [StartBehaviour("a"), StartBehaviour("b"), StartBehaviour("c")],
            2: [PauseBehaviour("a"), AbortBehaviour("c", "test")],
            3: [ResumeBehaviour("a")],
        },
    )
    cfg = SimConfig(robots=("x",), duration=(0.5, 0.6), capacity=3, time_limit=3.0)
    res = simulate(parse_tree("AND(a, b, c)"), cfg)
    a0, b0, c0, a1 = res.executions
    assert [e.node for e in (a0, b0, c0, a1)] == ["a", "b", "c", "a"]
    assert a0.aborted and c0.aborted and a0.end == c0.end < a1.start
    assert not (a0.completed or c0.completed)  # their finish events came and were ignored
    assert b0.completed and a1.completed and b0.end is not None and b0.end > a0.end
    assert a1.end is not None and a1.end >= a1.start + 0.5
