"""Optional observers: what a recorder says of its recording, and what ``run`` says of
observers that stopped.

A recorder that cannot write (a full disk, an I/O error, no permission) keeps running
and says so on its retained factsheet, in the ``recording`` field (``RecordingState``):
its credentials may write only its presence, factsheet and heartbeat. ``teamtree run``
reads that field, and the exit of every observer service, into ``ObserverLosses``;
an optional observer (see ``AgentSpec.optional``) that dies is reported in one line
and the mission goes on; the result block then says which recording is incomplete,
where it stopped and why. No I/O here.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from teamtree.agents.runtime.wire_decode import decode_body

#: the factsheet field a recorder reports its recording in
RECORDING_FIELD = "recording"


class RecordingWireError(ValueError):
    """A ``recording`` factsheet field that does not match ``RecordingState``."""


class RecordingState(msgspec.Struct, frozen=True, omit_defaults=True):
    """A recorder's ``recording``: ``writing`` to ``path``, or ``failed`` there after
    ``written`` messages at wall-clock ``failed_ms`` with the OS ``error``; it records
    nothing more after a failure."""

    state: Literal["writing", "failed"]
    path: str
    written: int = 0
    error: str = ""
    failed_ms: int = 0


def recording_of(sheet: Any) -> RecordingState | None:
    """The ``recording`` field of a factsheet body (None: it has none, or not one that
    decodes: a malformed field says nothing about the recording)."""
    if not isinstance(sheet, dict) or RECORDING_FIELD not in sheet:
        return None
    try:
        return decode_body(sheet[RECORDING_FIELD], RecordingState, RecordingWireError, "recording")
    except RecordingWireError:
        return None


def exit_phrase(code: int | None) -> str:
    """``code 1``, or ``code -9 (killed by SIGKILL)`` for a child a signal ended."""
    if code is None or code >= 0:
        return f"code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return f"code {code} (killed by {name})"


@dataclass
class ObserverLosses:
    """The observers of a run that stopped observing: exited, or their recording failed.
    ``at_s`` arguments are seconds into the run."""

    #: observer id -> what it stopped doing, where and why (one phrase)
    lost: dict[str, str] = field(default_factory=dict)
    #: observer id -> the file it records to (from its factsheet)
    paths: dict[str, str] = field(default_factory=dict)
    #: observers seen exiting
    exits: set[str] = field(default_factory=set)

    def exited(self, name: str, kind: str, code: int | None, at_s: float) -> str | None:
        """Note that observer `name` exited; returns the one line to say now (None:
        said already)."""
        if name in self.exits:
            return None
        self.exits.add(name)
        where = self.paths.get(name)
        kept = f"; {where} holds what it wrote until then" if where else ""
        phrase = f"{name} ({kind}) exited with {exit_phrase(code)} {at_s:.1f} s into the run{kept}"
        self.lost.setdefault(name, phrase)
        return (
            f"{kind} {name!r} exited with {exit_phrase(code)}; the mission goes on without "
            f"it (an optional observer: `required = true` on its [[agents]] entry stops "
            f"the run instead)"
        )

    def saw_factsheet(
        self, name: str, sheet: Any, at_s: float, required: bool = False
    ) -> str | None:
        """Read observer `name`'s factsheet; returns a line to say when it reports a
        failed recording for the first time (`required`: the run stops for it)."""
        state = recording_of(sheet)
        if state is None:
            return None
        self.paths[name] = state.path
        if state.state != "failed" or name in self.lost:
            return None
        self.lost[name] = (
            f"{name} stopped writing {state.path} after {state.written} "
            f"message(s), {at_s:.1f} s into the run: {state.error}"
        )
        then = "stopping (its entry says required = true)" if required else "the mission goes on"
        return f"cannot record: {self.lost[name]}; {then}"

    def block_lines(self) -> list[str]:
        """The result block's lines about incomplete observations (none: complete)."""
        return [f"  recording INCOMPLETE: {phrase}" for _, phrase in sorted(self.lost.items())]

    def note(self, names: set[str] | None = None) -> str:
        """A sentence for the run's summary ('' when every observation is complete);
        `names` limits it to those observers."""
        lost = sorted(n for n in self.lost if names is None or n in names)
        if not lost:
            return ""
        return f"The recording is incomplete ({', '.join(lost)}: see above)."
