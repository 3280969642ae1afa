"""The browsers' sign-ins of a web server started with ``login=True``: which cookie
holds which reader of the team (``TeamWatch``, connected as the user who signed in)
and the broker credentials a person signed in with.

Each sign-in's reader lives from the sign-in to the sign-out, the server's end or
its eviction as the oldest of more than ``MAX_LOGINS``; a person's agent acts with
the same credentials, so the two are kept together. The broker has already accepted
the user and password before they get here; the HTTP side is the server's.
"""

from __future__ import annotations

import contextlib
import secrets
from collections import OrderedDict
from typing import Any

from starlette.requests import Request
from starlette.websockets import WebSocket

from teamtree.agents.observers.web.watch import TeamWatch
from teamtree.broker import TopicError
from teamtree.broker.endpoint import Endpoint
from teamtree.broker.topics import validate_id

__all__ = ["COOKIE", "MAX_LOGINS", "SignIns"]

#: the cookie naming a browser's sign-in
COOKIE = "teamtree_login"
#: sign-ins kept at once (the oldest is signed out beyond)
MAX_LOGINS = 32


class SignIns:
    """``watches``: cookie -> the reader of that browser's sign-in, oldest first;
    ``credentials(person)``: what the person signed in with."""

    def __init__(self, endpoint: Endpoint, team: str, *, tls_context: Any = None) -> None:
        self.endpoint = endpoint
        self.team = team
        self.tls_context = tls_context
        self.watches: OrderedDict[str, TeamWatch] = OrderedDict()  # cookie -> reader
        self._people: dict[str, dict[str, str]] = {}  # person -> their sign-in

    def watch(self, conn: Request | WebSocket) -> TeamWatch | None:
        """The reader of this browser's sign-in (None: not signed in)."""
        token = conn.cookies.get(COOKIE)
        return self.watches.get(token) if token else None

    def holds(self, watch: TeamWatch) -> bool:
        """Whether `watch` is still a sign-in's reader (not signed out meanwhile)."""
        return watch in self.watches.values()

    def credentials(self, person: str) -> dict[str, str]:
        """The broker user and password `person` signed in with ({}: none)."""
        return self._people.get(person, {})

    async def add(self, username: str, password: str) -> str:
        """A reader connected as `username` for a new sign-in; its cookie's value. The
        oldest sign-ins beyond ``MAX_LOGINS`` are signed out."""
        watch = TeamWatch(
            self.endpoint,
            self.team,
            username=username,
            password=password,
            tls_context=self.tls_context,
            signed_in=True,
        )
        await watch.__aenter__()
        token = secrets.token_urlsafe(24)
        self.watches[token] = watch
        with contextlib.suppress(TopicError):
            self._people[validate_id(username, "user")] = {
                "username": username,
                "password": password,
            }
        while len(self.watches) > MAX_LOGINS:
            _, oldest = self.watches.popitem(last=False)
            await oldest.__aexit__(None, None, None)
        return token

    async def remove(self, token: str | None) -> TeamWatch | None:
        """Sign out the browser holding `token`: its reader, disconnected (None: no
        such sign-in)."""
        watch = self.watches.pop(token, None) if token else None
        if watch is not None:
            await watch.__aexit__(None, None, None)
        return watch

    async def close(self) -> None:
        """Disconnect every sign-in's reader."""
        for watch in list(self.watches.values()):
            await watch.__aexit__(None, None, None)
        self.watches.clear()
