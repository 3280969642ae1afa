"""One job's member search on the agent, seed 002 (§IV.C-D, §V.B): request, collect,
close the window early, select, accept, watch the helpers. The leases and messages
it speaks are in ``favor.py``.

Pure: events in, actions out; time is a number the caller passes.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence

from teamtree.broker import NoCapableAgentError
from teamtree.hardware import IDLE_BATTERY_THRESHOLD, RobotProfile
from teamtree.planners.capability.favor import (
    FavorAccept,
    FavorAction,
    FavorGrant,
    FavorReject,
    FavorRelease,
    FavorRequest,
    FavorRevoke,
    HelperLost,
    HelperStatus,
    Lease,
    LeaseState,
    Message,
    RoleChanged,
    Selected,
    SelectionFailed,
    Send,
)
from teamtree.planners.capability.favor_asking import FirstAsk
from teamtree.planners.capability.jobs import JobSpec
from teamtree.planners.capability.modes import (
    ActiveMatcher,
    FavorQuery,
    Offer,
    PassiveMatcher,
    Selection,
)

NO_ANSWER = "no answer when the window closed"
"""Why a lease whose robot had not answered was closed (a grant after it is released)."""


class RequesterState(enum.StrEnum):
    """Where a requester is."""

    UNSTARTED = "unstarted"
    COLLECTING = "collecting"
    WAITING = "waiting"
    WORKING = "working"
    FAILED = "failed"
    DONE = "done"


class FavorRequester:
    """The agent's side of one job: verify, request, collect, select, accept, watch.

    ``window`` is how long grants are collected (the deadline), ``ttl`` the hop limit,
    ``silence_timeout`` how long an accepted helper may stay silent, ``max_rounds`` how
    many consecutive fruitless rounds are tried. Raises nothing on wire events:
    unexpected messages are ignored.

    The window closes before its deadline when every expected robot has answered, or
    (``decide_early``) once the grants in hand already fix the choice: the requester
    knows each expected robot's offer in advance (``predicted``, from its factsheet:
    the paper's pre-calculation is deterministic), selects over them once, and closes
    when every helper of that best possible team has granted. Selection is an argmax
    over candidates that only grow with the offers, so the answers still out cannot
    change it. The paper collects whatever arrives within a fixed window; this keeps
    its selection rule and stops waiting for answers that cannot matter. A grant that
    differs from its prediction, or a refusal, re-forecasts from what is known.

    With ``ask_first`` it also asks that best team first and the other robots only when
    the forecast needs them (``favor_asking.py``).
    """

    def __init__(
        self,
        agent: RobotProfile,
        job: JobSpec,
        matcher: PassiveMatcher | ActiveMatcher,
        *,
        request_prefix: str | None = None,
        window: float = 0.1,
        ttl: int = 2,
        silence_timeout: float = 1.0,
        max_rounds: int = 3,
        idle_threshold: float = IDLE_BATTERY_THRESHOLD,
        retry_s: float = 0.3,
        impossible: str = "",
        decide_early: bool = True,
        ask_first: bool = False,
    ) -> None:
        self.agent = agent
        self.job = job
        self.matcher = matcher
        self.prefix = request_prefix or f"{agent.robot_id}:{job.name}"
        self.window = window
        self.ttl = ttl
        self.silence_timeout = silence_timeout
        self.max_rounds = max_rounds
        self.idle_threshold = idle_threshold
        self.retry_s = retry_s
        self.impossible = impossible
        self.decide_early = decide_early
        self.asking = FirstAsk(ask_first and decide_early)
        self.expect: frozenset[str] | None = None
        self.predicted: dict[str, Offer] = {}
        self.best_helpers: frozenset[str] | None = None
        self.answered: set[str] = set()
        self.closed_by = ""
        self.retry_at = 0.0
        self.state = RequesterState.UNSTARTED
        self.round = 0
        self.failed_rounds = 0
        self.request_id = ""
        self.deadline = 0.0
        self.leases: dict[tuple[str, str], Lease] = {}
        self.lost: set[str] = set()
        self.selection: Selection | None = None
        self._neighbours: list[str] = []
        self.query: FavorQuery = matcher.query(agent, job)

    # helpers -----------------------------------------------------------------
    def _lease(self, request_id: str, helper: str, now: float) -> Lease:
        key = (request_id, helper)
        if key not in self.leases:
            self.leases[key] = Lease(request_id, self.agent.robot_id, helper, since=now)
        return self.leases[key]

    def _release(self, lease: Lease, reason: str) -> Send:
        """The message that frees ``lease``'s helper, saying why."""
        release = FavorRelease(lease.request_id, self.agent.robot_id, lease.helper, reason)
        return Send(lease.helper, release)

    def accepted(self) -> list[Lease]:
        """Leases currently ACCEPTED (the helpers working for this job)."""
        return [x for x in self.leases.values() if x.state == LeaseState.ACCEPTED]

    def _new_round(
        self,
        now: float,
        neighbours: Sequence[str],
        expect: Sequence[str] | None = None,
        predicted: Mapping[str, Offer] | None = None,
    ) -> list[FavorAction]:
        self.round += 1
        self.request_id = f"{self.prefix}#{self.round}"
        self.deadline = now + self.window
        self.state = RequesterState.COLLECTING
        req = FavorRequest(
            self.request_id,
            self.agent.robot_id,
            self.query,
            self.ttl,
            self.deadline,
            (self.agent.robot_id,),
        )
        helping = {x.helper for x in self.accepted()}
        self.answered = set()
        if expect is not None:
            self.expect = frozenset(expect) - self.lost - helping - {self.agent.robot_id}
        elif self.expect is not None:
            self.expect = self.expect - self.lost - helping
        me = self.agent.robot_id
        asked = [nb for nb in sorted(set(neighbours))
                 if nb != me and nb not in self.lost and nb not in helping]  # fmt: skip
        self._neighbours = list(neighbours)
        if predicted is not None:
            self.predicted = dict(predicted)
        self._forecast()
        need = None if self.best_helpers is None else self.best_helpers - helping
        first, first_req = self.asking.start_round(
            req, asked, need, self.failed_rounds, now, self.window
        )
        out: list[FavorAction] = []
        for nb in first:
            self._lease(self.request_id, nb, now)
            out.append(Send(nb, first_req))
        return out

    def _ask_more(self, now: float, everyone: bool = False) -> list[FavorAction]:
        """Ask the robots not asked yet that the forecast now needs (``FirstAsk.more``)."""
        asking = self.asking
        if not (asking.unasked and asking.request and self.state == RequesterState.COLLECTING):
            return []
        reached = {x.helper for x in self.leases.values() if x.request_id == self.request_id}
        reached |= {x.helper for x in self.accepted()}
        out: list[FavorAction] = []
        for nb in asking.more(self.best_helpers, reached, everyone):
            self._lease(self.request_id, nb, now)
            out.append(Send(nb, asking.request))
        return out

    def _forecast(self) -> None:
        """The helpers of the best team the expected robots can still give (granted
        offers as they came, the others as predicted), or None when that cannot be
        told: no expectation, an expected robot without a prediction, or no team."""
        self.best_helpers = None
        if not self.decide_early or self.expect is None:
            return
        offers = [x.offer for x in self.accepted() if x.offer is not None]
        for robot in sorted(self.expect):
            lease = self.leases.get((self.request_id, robot))
            if lease is not None and lease.state == LeaseState.REJECTED:
                continue  # it declined this round
            if lease is not None and lease.state == LeaseState.GRANTED:
                offer = lease.offer
            else:
                offer = self.predicted.get(robot)
            if offer is None:
                return
            offers.append(offer)
        try:
            selection = self.matcher.select(self.agent, self.job, offers)
        except NoCapableAgentError:
            return
        self.best_helpers = frozenset(selection.helpers)

    def decided(self) -> bool:
        """The best team the expected robots can give has granted (or was committed):
        the answers still out cannot change the selection."""
        if self.best_helpers is None:
            return False
        ready = {x.helper for x in self.accepted()}
        for lease in self.leases.values():
            if lease.request_id == self.request_id and lease.state == LeaseState.GRANTED:
                ready.add(lease.helper)
        return self.best_helpers <= ready - self.lost

    # events ------------------------------------------------------------------
    def start(
        self,
        now: float,
        neighbours: Sequence[str],
        expect: Sequence[str] | None = None,
        predicted: Mapping[str, Offer] | None = None,
    ) -> list[FavorAction]:
        """The job arrived: spread the request to ``neighbours`` (idle, in range).

        ``expect``: the robots that will grant or decline (the window closes when all
        have); None waits for the deadline every round. ``predicted``: the offer each
        of them will make (see the class docstring)."""
        if self.state != RequesterState.UNSTARTED:
            return []
        return [
            RoleChanged(self.agent.robot_id, "busy"),
            *self._new_round(now, neighbours, expect, predicted),
            *self._close_if_answered(now),
        ]

    def all_answered(self) -> bool:
        """Every expected robot has granted or declined in the current round."""
        return self.expect is not None and self.expect <= self.answered

    def _close_if_answered(self, now: float) -> list[FavorAction]:
        if self.state != RequesterState.COLLECTING:
            return []
        if self.all_answered():
            self.closed_by = "all answered"
            return self._select(now)
        if self.decided():
            self.closed_by = "best team granted"
            return self._select(now)
        return []

    def on_message(self, msg: Message, now: float) -> list[FavorAction]:
        """A message addressed to this requester."""
        if getattr(msg, "requester", None) != self.agent.robot_id:
            return []
        if isinstance(msg, FavorGrant):
            return self._on_grant(msg, now) + self._close_if_answered(now)
        if isinstance(msg, FavorReject):
            if msg.request_id == self.request_id:
                self.answered.add(msg.helper)
            lease = self.leases.get((msg.request_id, msg.helper))
            if lease is None:
                return self._close_if_answered(now)
            if lease.state == LeaseState.ACCEPTED:
                return self._lose(lease, now, f"refused: {msg.reason}", LeaseState.REVOKED)
            lease.move(LeaseState.REJECTED, now, msg.reason)
            if msg.request_id == self.request_id and self.best_helpers is not None:
                self._forecast()
                return self._ask_more(now) + self._close_if_answered(now)
            return self._close_if_answered(now)
        if isinstance(msg, HelperStatus):
            lease = self.leases.get((msg.request_id, msg.helper))
            if lease is None:
                return []
            if lease.state != LeaseState.ACCEPTED:
                # the helper still thinks it helps: our release was lost, repeat it
                reason = lease.reason or lease.state.value
                return [self._release(lease, reason)] if not lease.active else []
            lease.last_seen = now
            if msg.battery <= self.idle_threshold:
                return self._lose(lease, now, "battery below idle threshold", LeaseState.REVOKED)
            return []
        if isinstance(msg, FavorRevoke):
            lease = self.leases.get((msg.request_id, msg.helper))
            if lease is None or lease.state != LeaseState.ACCEPTED:
                return []
            return self._lose(lease, now, msg.reason or "revoked", LeaseState.REVOKED)
        return []

    def _on_grant(self, msg: FavorGrant, now: float) -> list[FavorAction]:
        lease = self._lease(msg.request_id, msg.helper, now)
        if (
            msg.request_id != self.request_id
            or self.state != RequesterState.COLLECTING
            or msg.helper in self.lost
        ):
            if lease.state == LeaseState.REJECTED and lease.reason == NO_ANSWER:
                lease.reason = "late"  # its grant came after the window closed: free it
                return [self._release(lease, "late")]
            if lease.state in (LeaseState.REQUESTED, LeaseState.GRANTED):
                lease.move(LeaseState.GRANTED, now)
                lease.move(LeaseState.REJECTED, now, "late")
                return [self._release(lease, "late")]
            return []
        self.answered.add(msg.helper)
        if lease.move(LeaseState.GRANTED, now):
            lease.offer = msg.offer
            if self.decide_early and msg.offer != self.predicted.get(msg.helper):
                self._forecast()
                return self._ask_more(now)
        return []

    def round_due(self, now: float) -> bool:
        """A retry round is waiting and its time has come (pass fresh neighbours to tick)."""
        return self.state == RequesterState.WAITING and now >= self.retry_at

    def tick(
        self,
        now: float,
        neighbours: Sequence[str] | None = None,
        expect: Sequence[str] | None = None,
        predicted: Mapping[str, Offer] | None = None,
    ) -> list[FavorAction]:
        """Advance time: close the collection at the deadline, start a due retry round
        (with ``neighbours``, ``expect`` and ``predicted`` when given, else the last
        ones), watch helpers' heartbeats."""
        out: list[FavorAction] = []
        if self.round_due(now):
            nbs = self._neighbours if neighbours is None else neighbours
            out.extend(self._new_round(now, nbs, expect, predicted))
        if self.asking.due(now):
            out.extend(self._ask_more(now, everyone=True))
        closed = self._close_if_answered(now)  # e.g. nobody was expected
        if closed:
            out.extend(closed)
        elif self.state == RequesterState.COLLECTING and now >= self.deadline:
            self.closed_by = "deadline"
            out.extend(self._select(now))
        if self.state == RequesterState.WORKING:
            for lease in self.accepted():
                if now - lease.last_seen > self.silence_timeout:
                    out.extend(self._lose(lease, now, "silent", LeaseState.EXPIRED))
                    break
        return out

    def lose_helper(self, helper: str, now: float, reason: str = "gone") -> list[FavorAction]:
        """An accepted helper vanished (e.g. its Last Will): expire its lease and seek
        another, as a silent helper. Does nothing for a robot that is not helping."""
        for lease in self.accepted():
            if lease.helper == helper:
                return self._lose(lease, now, reason, LeaseState.EXPIRED)
        return []

    def finish(self, now: float) -> list[FavorAction]:
        """The job is done: release every helper."""
        out: list[FavorAction] = []
        for lease in self.accepted():
            lease.move(LeaseState.RELEASED, now, "done")
            out.append(self._release(lease, "done"))
        self.state = RequesterState.DONE
        out.append(RoleChanged(self.agent.robot_id, "idle"))
        return out

    # decisions ---------------------------------------------------------------
    def _select(self, now: float) -> list[FavorAction]:
        out: list[FavorAction] = []
        grants: list[Lease] = []
        self.asking.unasked = []
        for lease in self.leases.values():
            if lease.request_id != self.request_id:
                continue
            if lease.state == LeaseState.REQUESTED:
                lease.move(LeaseState.REJECTED, now, NO_ANSWER)
            elif lease.state == LeaseState.GRANTED and lease.helper not in self.lost:
                grants.append(lease)
        committed = self.accepted()
        offers = [x.offer for x in committed + grants if x.offer is not None]
        try:
            selection = self.matcher.select(self.agent, self.job, offers)
        except NoCapableAgentError as exc:
            for lease in grants:
                lease.move(LeaseState.REJECTED, now, "not selected")
                out.append(self._release(lease, "not selected"))
            self.failed_rounds += 1
            if self.failed_rounds < self.max_rounds and not self.impossible:
                if self.closed_by == "all answered":
                    # everyone answered: wait for helpers to become idle, then ask again
                    self.state = RequesterState.WAITING
                    self.retry_at = now + self.retry_s
                    return out
                return out + self._new_round(now, self._neighbours)
            for lease in committed:
                lease.move(LeaseState.RELEASED, now, "job abandoned")
                out.append(self._release(lease, "job abandoned"))
            self.state = RequesterState.FAILED
            if self.impossible:
                out.append(SelectionFailed(self.job.name, self.impossible, impossible=True))
            else:
                out.append(SelectionFailed(self.job.name, str(exc)))
            out.append(RoleChanged(self.agent.robot_id, "idle"))
            return out
        self.failed_rounds = 0
        chosen = set(selection.helpers)
        for lease in committed:
            if lease.helper not in chosen:
                lease.move(LeaseState.RELEASED, now, "no longer needed")
                out.append(self._release(lease, "no longer needed"))
        kept = {x.helper for x in committed if x.helper in chosen}
        for lease in grants:
            if lease.helper in chosen and lease.helper not in kept:
                lease.move(LeaseState.ACCEPTED, now)
                lease.last_seen = now
                out.append(
                    Send(
                        lease.helper,
                        FavorAccept(
                            lease.request_id, self.agent.robot_id, lease.helper, selection.mode
                        ),
                    )
                )
            else:
                lease.move(LeaseState.REJECTED, now, "not selected")
                out.append(self._release(lease, "not selected"))
        self.selection = selection
        self.state = RequesterState.WORKING
        out.append(Selected(selection, self.round))
        return out

    def _lose(self, lease: Lease, now: float, reason: str, to: LeaseState) -> list[FavorAction]:
        lease.move(to, now, reason)
        self.lost.add(lease.helper)
        out: list[FavorAction] = [HelperLost(lease.helper, reason)]
        if to == LeaseState.EXPIRED:
            out.append(self._release(lease, "expired"))
        if self.state == RequesterState.WORKING:
            out.extend(self._new_round(now, self._neighbours))
        return out
