"""The team page's missions desk: submit, list and cancel missions of a running team
through the dispatch protocol (``teamtree.agents.missions.protocol``).

The web view stays a passive client (no presence, never a team member): a request
goes out through the view's own broker connection with ``reply_to`` set to the
requester, and the queue's reply comes back on ``<queue>/reply/<requester>``, which the
view already reads (it reads the whole team). With a broker user (under access
control: the view's, or the one signed in) the requester is that login and the
request goes on its own ``<login>/missions``, so the queue records the login; it
reaches the queue only when that user may write there (a read-only observer may not;
the queue takes submissions and cancels only from operators when the config names
them), otherwise the page says so. Without one the requester is an id of the view's
own (``web-<hex>``, or the name another observer such as the ROS 2 bridge gives) and
the request goes on the team channel ``_/missions``.
"""

from __future__ import annotations

import asyncio
import contextlib
import tomllib
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from teamtree.agents.missions.protocol import CANCEL, CHANNEL, SUBMIT
from teamtree.agents.missions.wire import CancelRequest, SubmitRequest, to_wire
from teamtree.agents.runtime.config import parse_mission
from teamtree.agents.runtime.pending import PendingRequests
from teamtree.broker import ConfigError
from teamtree.broker.connection import Outgoing
from teamtree.broker.envelope import Envelope, encode
from teamtree.broker.hlc import HybridLogicalClock, wall_ms
from teamtree.broker.topics import build

__all__ = ["DeskError", "MissionDesk", "mission_files", "mission_from_toml"]

#: seconds to wait for the mission queue's reply
REPLY_TIMEOUT_S = 5.0
#: the largest mission text the page may send (a mission file is a few lines)
MAX_MISSION_BYTES = 64 * 1024


class DeskError(Exception):
    """A request the desk could not carry out; `status` is the HTTP status to answer
    with and the message a sentence for the page (what is wrong, how to fix it)."""

    def __init__(self, message: str, status: int = 400, field: str | None = None):
        super().__init__(message)
        self.status = status
        self.field = field


def mission_from_toml(text: str, name: str = "<pasted>") -> dict[str, Any]:
    """The ``[mission]`` table of a mission file's text, checked as ``teamtree submit``
    checks a file (unknown keys, types); DeskError naming the key otherwise."""
    if len(text.encode()) > MAX_MISSION_BYTES:
        raise DeskError(f"{name}: longer than {MAX_MISSION_BYTES // 1024} KiB; is it a mission?")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DeskError(f"{name}: not valid TOML: {exc}", field="toml") from None
    extra = sorted(set(data) - {"mission"})
    if extra or not isinstance(data.get("mission"), dict):
        what = f", not {', '.join(extra)}" if extra else ""
        raise DeskError(
            f'{name}: expected one [mission] table{what} (e.g. [mission] kind = "tasktree" '
            'tree = "THEN(cup, sugar)")',
            field=extra[0] if extra else "mission",
        )
    try:
        parse_mission(data["mission"], Path(name))
    except ConfigError as exc:
        raise DeskError(str(exc), field=exc.key) from None
    return data["mission"]


def mission_files(directory: Path | None) -> dict[str, str]:
    """The mission files (``*.toml``) of `directory` that hold a ``[mission]`` table,
    by file name, with their text; {} when there is no such directory."""
    if directory is None or not directory.is_dir():
        return {}
    out = {}
    for path in sorted(directory.glob("*.toml")):
        with contextlib.suppress(OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            text = path.read_text()
            if isinstance(tomllib.loads(text).get("mission"), dict):
                out[path.name] = text
    return out


class MissionDesk:
    """Requests of the dispatch protocol from the web view. `publish` sends one
    message through the view's connection; `queues` names the ONLINE mission queues;
    ``on_message`` must be given every message the view receives (replies)."""

    def __init__(
        self,
        team: str,
        publish: Callable[[Outgoing], Awaitable[bool]],
        queues: Callable[[], list[str]],
        *,
        timeout_s: float = REPLY_TIMEOUT_S,
        user: str | None = None,
        requester: str | None = None,
    ):
        self.team = team
        #: who asks: the login, else `requester` (another observer's own name), else an
        #: id of the web view's own
        self.requester = user or requester or f"web-{uuid.uuid4().hex[:8]}"
        self._publish = publish
        self._queues = queues
        self.timeout_s = timeout_s
        self.user = user
        self.clock = HybridLogicalClock(self.requester)
        self._pending = PendingRequests()
        self._hid = wall_ms()  # header ids grow across restarts of the view

    def on_message(self, env: Envelope, topic: Any) -> None:
        """Attach a reply addressed to this desk to its request."""
        if topic.channel == "reply" and topic.recipient == self.requester:
            self._pending.resolve(env)

    async def submit(self, mission: dict[str, Any]) -> dict[str, Any]:
        """Submit `mission` (a ``[mission]`` table); the queue's ``mission.accepted``
        body, or DeskError with its ``mission.rejected`` reason (naming the field)."""
        return await self._ask(SUBMIT, to_wire(SubmitRequest(mission)))

    async def cancel(self, mission_id: str) -> dict[str, Any]:
        """Cancel a queued or running mission; the ``mission.cancelled`` body."""
        return await self._ask(CANCEL, to_wire(CancelRequest(mission_id)))

    async def _ask(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        queues = self._queues()
        if not queues:
            raise DeskError(
                f"no mission_queue service is online in team {self.team!r}; start the team "
                "with one (a config with a mission_queue agent, e.g. tea_party_queue.toml)",
                status=503,
            )
        queue = queues[0]
        corr = uuid.uuid4().hex
        pending = self._pending.open(corr, kind, expect=frozenset({queue}), first_only=True)
        try:
            self._hid += 1
            env = Envelope(
                kind=kind,
                sender=self.requester,
                hid=self._hid,
                ts=wall_ms(),
                hlc=self.clock.now(),
                body=body,
                reply_to=self.requester,
                corr=corr,
                deadline=wall_ms() + int(self.timeout_s * 1000),
                to=queue,
            )
            topic = build(self.team, self.user, CHANNEL)  # a user: names the login
            await self._publish(Outgoing(topic, encode(env), qos=1))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(pending.done), self.timeout_s)
        finally:
            self._pending.close(corr)
        reply = pending.replies.get(queue)
        if reply is None:
            who = ""
            if self.user:
                who = f" (may broker user {self.user!r} dispatch? only operators may)"
            raise DeskError(
                f"the mission queue {queue!r} did not answer within {self.timeout_s:g} s{who}",
                status=504,
            )
        answer = reply.body if isinstance(reply.body, dict) else {}
        if reply.kind.endswith(".rejected"):
            raise DeskError(
                str(answer.get("error") or "rejected"), field=answer.get("field"), status=400
            )
        return {"kind": reply.kind, "queue": queue, **answer}
