"""Asking the best team first: which robots one favor round asks, and when the rest.

With ``FavorRequester(ask_first=True)`` a round's request goes first only to the
helpers of the best team the factsheets forecast, when they are all neighbours, with
ttl 1. The other neighbours are asked when a refusal or a grant unlike its prediction
makes the forecast need them (those it needs; all when it cannot tell, or when it
needs a robot only a neighbour's forwarding reaches), or when the team has not
granted within ``ASK_REST_SHARE`` of the window. The robots whose answers cannot
change the choice are then never woken, which on a broker is most of a request's
cost in a big team; the selection is the one the full round would make from the same
answers. This is a choice of this runtime, not of the paper (Lee et al. ask every idle
neighbour). One reach is given up: a robot two hops away whose only path runs through
a first-asked helper does not hear the round (that helper has seen the request);
should the round end without a team, the next round asks everyone.

Pure: no I/O, no clock reads.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field, replace

from teamtree.planners.capability.favor import FavorRequest

ASK_REST_SHARE = 0.25
"""The share of the window after which the robots not asked yet are asked when the
best team has not granted by then (a lost message, a silent robot)."""


@dataclass
class FirstAsk:
    """Who the current round has asked and who not yet (``enabled``: ask first at all)."""

    enabled: bool
    unasked: list[str] = field(default_factory=list)
    """The neighbours this round has not asked yet."""
    ask_rest_at: float = 0.0
    asked: int = 0
    """The robots this round's request was sent to by the requester (not those a
    forwarder reached)."""
    request: FavorRequest | None = None

    def start_round(
        self,
        request: FavorRequest,
        neighbours: list[str],
        need: Set[str] | None,
        failed_rounds: int,
        now: float,
        window: float,
    ) -> tuple[list[str], FavorRequest]:
        """A new round among `neighbours`: who is asked at once, and the request they
        get. Only the forecast's helpers still needed (`need`) when they are all
        neighbours and no round before failed; everyone otherwise. Those asked first
        get the request with ttl 1: the best team is in direct reach."""
        first, self.unasked = neighbours, []
        if self.enabled and need is not None and not failed_rounds and need <= set(neighbours):
            first = [nb for nb in neighbours if nb in need]
            self.unasked = [nb for nb in neighbours if nb not in need]
        self.ask_rest_at = now + window * ASK_REST_SHARE
        self.request = request
        self.asked = len(first)
        return first, (replace(request, ttl=1) if self.unasked else request)

    def more(self, best: Set[str] | None, reached: Set[str], everyone: bool) -> list[str]:
        """The robots not asked yet to ask now, with the round's own ttl: those of the
        forecast's `best` helpers; all of them when `everyone`, when the forecast
        cannot tell, or when it needs a robot neither `reached` nor a neighbour."""
        if everyone or best is None or not best - reached <= set(self.unasked):
            ask, self.unasked = self.unasked, []
        else:
            ask = [nb for nb in self.unasked if nb in best]
            self.unasked = [nb for nb in self.unasked if nb not in best]
        self.asked += len(ask)
        return ask

    def due(self, now: float) -> bool:
        """Robots are still unasked and a quarter of the window has passed."""
        return bool(self.unasked) and now >= self.ask_rest_at
