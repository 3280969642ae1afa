"""The peer rule as a state machine (seed 000 §2.3, Figs. 7, 8; DESIGN.md "Claiming a node")."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

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
    check_invariants,
    conflict_set,
    parse_tree,
    simulate,
)

FIG2 = "AND(THEN(cup, AND(sugar, tea_pot)), THEN(sandwich, OR(orange, apple), burger))"


class Team:
    """Hand-routed controllers: messages wait in ``outbox`` until a test delivers them."""

    def __init__(self, tree_text: str, pots: dict[str, dict[str, float]]):
        self.tree = parse_tree(tree_text)
        ids = list(pots)
        self.ctl = {
            r: TaskController(
                self.tree,
                r,
                online_peers=set(ids) - {r},
                potentials={self.tree.find(k): v for k, v in p.items()},
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
    assert out[1:] == [PublishClaim(replace(mine, round=1), to="a")]
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
