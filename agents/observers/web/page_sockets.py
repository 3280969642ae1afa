"""The pages' websockets: the team page's snapshots, and a person's page (the offer to
join, then their view and their taps).

Both push on change and at least every second, give up on a page that stops reading,
and send a page to the sign-in form when its browser is not (or no longer) signed in,
so they share their pacing and close code here. Which reader serves a browser is the
server's to say (``watch_of``, ``reading``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from typing import Any

import structlog
from starlette.websockets import WebSocket, WebSocketDisconnect

from teamtree.agents.observers.web.person import HumanSessions
from teamtree.agents.observers.web.state import WebState
from teamtree.agents.observers.web.watch import TeamWatch
from teamtree.broker import TopicError

__all__ = ["CLOSE_LOGIN", "PUSH_S", "PageSockets", "expected_by"]

#: seconds between checks for news to push; a page also gets a push at least every second
PUSH_S = 0.2
SEND_TIMEOUT_S = 5.0
#: the websocket close code that sends a page to the sign-in form
CLOSE_LOGIN = 4401
log = structlog.get_logger("teamtree.web")


def expected_by(state: WebState, person: str) -> list[str]:
    """The robots whose factsheet names `person` among the humans they model."""
    return sorted(
        agent
        for agent, sheet in state.factsheets.items()
        if isinstance(sheet.get("humans"), list) and person in sheet["humans"]
    )


class PageSockets:
    """``team`` and ``person`` serve the two websocket routes. `watch_of` gives a
    connection's reader (None: not signed in); `reading` says whether a reader still
    serves its browser (False once signed out)."""

    def __init__(
        self,
        team: str,
        sessions: HumanSessions,
        *,
        watch_of: Callable[[WebSocket], TeamWatch | None],
        reading: Callable[[TeamWatch], bool],
        any_person: bool,
        login: bool,
    ) -> None:
        self.team = team
        self.sessions = sessions
        self.watch_of = watch_of
        self.reading = reading
        self.any_person = any_person
        self.login = login

    async def team_ws(self, ws: WebSocket) -> None:
        """Team snapshots, on change and at least every second."""
        await ws.accept()
        watch = self.watch_of(ws)
        if watch is None:
            await ws.close(code=CLOSE_LOGIN)
            return
        last, sent_at = "", 0.0
        try:
            while True:
                if not self.reading(watch):
                    await ws.close(code=CLOSE_LOGIN)  # signed out meanwhile
                    return
                text = watch.snapshot_text()
                now = time.monotonic()
                if text != last or now - sent_at >= 1.0:
                    await asyncio.wait_for(ws.send_text(text), SEND_TIMEOUT_S)
                    last, sent_at = text, now
                await asyncio.sleep(PUSH_S)
        except (WebSocketDisconnect, TimeoutError, RuntimeError, OSError):
            return

    async def _join(self, ws: WebSocket, person: str, watch: TeamWatch) -> bool:
        """Until the person taps "join": show who expects them. Joining is allowed when
        a robot of the team models this person (its factsheet's ``humans``), or with
        ``--any-person``; a stray visit to /human/<typo> never adds a team member."""
        receive: asyncio.Future[str] | None = None
        try:
            while True:
                expected = expected_by(watch.state, person)
                allowed = bool(expected) or self.any_person
                signed_in_as = not self.login or watch.username == person
                offer = {
                    "id": person,
                    "team": self.team,
                    "expected_by": expected,
                    "expectations": watch.state.kitting.for_person(person),
                }
                await ws.send_text(json.dumps({"join": {**offer, "allowed": allowed}}))
                if receive is None:
                    receive = asyncio.ensure_future(ws.receive_text())
                done, _ = await asyncio.wait({receive}, timeout=1.0)
                if not done:
                    continue
                text, receive = receive.result(), None
                if _tap(text).get("action") == "join" and allowed and signed_in_as:
                    return True
                why = "tap join first"
                if not signed_in_as:
                    why = f"sign in as {person!r} to take part as {person!r}"
                if not allowed:
                    why = (
                        f"no robot of team {self.team!r} models a person {person!r} yet (their "
                        "factsheets' humans); wait for the robots, or start the server with "
                        "--any-person"
                    )
                await ws.send_text(json.dumps({"error": why}))
        except (WebSocketDisconnect, RuntimeError, OSError):
            return False
        finally:
            if receive is not None:
                receive.cancel()

    async def person_ws(self, ws: WebSocket) -> None:
        """A person's page: the offer to join until they do, then their view pushed on
        change and at least every second while their taps are carried out."""
        await ws.accept()
        watch = self.watch_of(ws)
        if watch is None:
            await ws.close(code=CLOSE_LOGIN)
            return
        person = ws.path_params["agent_id"]
        # with sign-ins only the person's own sign-in acts for them; others only watch
        watching = self.login and watch.username != person
        if (person not in self.sessions.agents or watching) and not await self._join(
            ws, person, watch
        ):
            return
        try:
            agent = await self.sessions.get(person)
        except (ValueError, TopicError) as exc:
            reason = exc.reason if isinstance(exc, TopicError) else str(exc)
            with contextlib.suppress(Exception):
                await ws.send_text(json.dumps({"error": reason}))
                await ws.close(code=4000)
            return
        reader = asyncio.create_task(self._taps(ws, agent.id))
        version, sent_at = -1, 0.0
        try:
            while not reader.done():
                now = time.monotonic()
                if agent.version != version or now - sent_at >= 1.0:
                    version, sent_at = agent.version, now
                    expects = watch.state.kitting.for_person(agent.id)
                    view = {**agent.view(), "expectations": expects}
                    text = json.dumps(view, default=str)
                    await asyncio.wait_for(ws.send_text(text), SEND_TIMEOUT_S)
                await asyncio.sleep(PUSH_S / 2)
        except (WebSocketDisconnect, TimeoutError, RuntimeError, OSError):
            pass
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader

    async def _taps(self, ws: WebSocket, agent_id: str) -> None:
        """Carry out the page's taps; a bad one is answered with an error, never fatal."""
        with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
            while True:
                text = await ws.receive_text()
                agent = self.sessions.agents.get(agent_id)
                if agent is None:
                    return
                tap = _tap(text)
                try:
                    if not tap:
                        raise ValueError(
                            f'a tap is a JSON object such as {{"action": "finish"}}; '
                            f"got {text[:80]!r}"
                        )
                    action = tap.get("action")
                    if action == "start" and isinstance(tap.get("node"), str):
                        await agent.start(tap["node"])
                    elif action == "finish":
                        await agent.finish()
                    elif action == "answer" and isinstance(tap.get("dialog_id"), str):
                        await agent.answer(tap["dialog_id"], bool(tap.get("keep")))
                    elif action == "join":
                        pass  # another tab of the same person: already in
                    elif action == "leave":
                        log.info("web.person_leaving", person=agent_id)
                        await self.sessions.leave(agent_id)
                        log.info("web.person_left", person=agent_id)
                        await ws.send_text(json.dumps({"left": True}))
                        return
                    else:
                        raise ValueError(
                            f"unknown tap {text[:80]!r}; expected start(node), finish, "
                            "answer(dialog_id, keep) or leave"
                        )
                except ValueError as exc:
                    log.warning("web.bad_tap", person=agent_id, error=str(exc))
                    await ws.send_text(json.dumps({"error": str(exc)}))
                finally:
                    agent.acknowledge(tap.get("tap"))  # the page may tap again


def _tap(text: str) -> dict[str, Any]:
    """A tap from the page as a map, or {} when it is not a JSON object."""
    try:
        tap = json.loads(text)
    except ValueError:
        return {}
    return tap if isinstance(tap, dict) else {}
