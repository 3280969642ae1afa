"""A run's observer services (recorders, monitors, web): which the mission goes on
without, and whether their recordings are complete.

An observer whose entry does not say ``required = true`` may exit, or report that it
cannot write, and the mission goes on: the run says so once and the result block says
the recording is incomplete. A required observer's failed recording stops the run and
fails the mission. Those rules are one policy about observers, applied wherever the
run hears of them (their factsheets, their exits, the verdict), so they live together.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from teamtree.agents.runtime.config import AgentSpec
from teamtree.agents.runtime.recording import ObserverLosses
from teamtree.broker.acl import OBSERVER_KINDS

if TYPE_CHECKING:
    from teamtree.agents.runtime.launcher import Child


class RunObservers:
    """The observer services of one run and what they lost (see module docstring)."""

    def __init__(
        self,
        services: Iterable[AgentSpec],
        say: Callable[[str], None],
        since_start: Callable[[], float],
    ):
        services = list(services)
        #: services the mission goes on without (see AgentSpec.optional), by id
        self.optional = {s.id: s.kind for s in services if s.optional}
        #: observer services (optional or required) whose factsheet reports a recording
        self.ids = {s.id for s in services if s.kind in OBSERVER_KINDS}
        self.losses = ObserverLosses()
        #: set when a required observer's recording failed: the run stops
        self.required_lost = asyncio.Event()
        self._say = say
        self._since_start = since_start

    def saw_factsheet(self, name: str, sheet: Any) -> None:
        """Observer `name`'s factsheet (of this run's mission): say a failed recording
        once, and stop the run when the observer is required."""
        required = name not in self.optional
        line = self.losses.saw_factsheet(name, sheet, self._since_start(), required)
        self._say_lost(line)
        if line is not None and required:
            self.required_lost.set()

    def exited(self, child: Child) -> None:
        """An optional observer exited: one line, and the mission goes on."""
        kind = self.optional[child.name]
        at = self._since_start()
        self._say_lost(self.losses.exited(child.name, kind, child.returncode, at))

    def _say_lost(self, line: str | None) -> None:
        """Say an observer's loss (once: None when said already)."""
        if line is not None:
            self._say(line)

    def judge(self, ok: bool, summary: str) -> tuple[bool, str]:
        """The run's verdict and summary with its observers' losses: a required
        observer's incomplete recording fails the mission, an optional one's is noted."""
        required = {n for n in self.losses.lost if n in self.ids} - set(self.optional)
        if ok and required:
            lost = "; ".join(self.losses.lost[n] for n in sorted(required))
            return False, f"Mission FAILED: the required recording is incomplete ({lost})."
        note = self.losses.note()
        return ok, f"{summary} {note}" if note else summary
