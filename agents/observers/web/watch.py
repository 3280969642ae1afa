"""One reader of the team for the web view: a passive broker client with one broker
user's credentials (``TeamObserver``: no presence, never a team member), the picture
it feeds (``WebState``) and the missions desk that speaks through it.

Without a login the server has one, shared by every page. With a login (``teamtree
web --login``, or a broker that refuses anonymous clients) each signed-in browser has
its own, connected as the user who signed in, so the page shows exactly what the
broker lets that user read: its ACL is the only filter, and nothing is cached across
users.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from teamtree.agents.observers.monitor import TeamObserver
from teamtree.agents.observers.web.missions import MissionDesk
from teamtree.agents.observers.web.state import WebState
from teamtree.broker.connection import Incoming
from teamtree.broker.endpoint import Endpoint
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic

__all__ = ["TeamWatch", "check_login", "refuses_anonymous"]

#: seconds a sign-in waits for the broker's answer
LOGIN_TIMEOUT_S = 5.0


class TeamWatch:
    """``async with TeamWatch(...)`` connects; ``snapshot_text()`` is the team page's
    JSON; ``desk`` submits and cancels missions as this user (as `requester` in the
    queue's records when given). The ROS 2 bridge reads the team through one too."""

    def __init__(
        self,
        endpoint: Endpoint,
        team: str,
        *,
        username: str | None = None,
        password: str | None = None,
        tls_context: Any = None,
        signed_in: bool = False,
        client_prefix: str = "web",
        requester: str | None = None,
    ):
        self.username = username
        self.signed_in = signed_in  #: a browser's sign-in (the page names the user)
        self.password = password
        self.state = WebState(team)
        self.observer = TeamObserver(
            endpoint,
            team,
            username=username,
            password=password,
            tls_context=tls_context,
            on_message=self._on_message,
            client_prefix=client_prefix,
        )
        self.observer.state = self.state.monitor  # one view, fed once
        self.desk = MissionDesk(
            team,
            lambda message: self.observer.connection.publish(message),
            self.state.mission_queues,
            user=username,
            requester=requester,
        )
        self._cache: tuple[tuple[int, int], str] | None = None

    async def __aenter__(self) -> TeamWatch:
        await self.observer.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.observer.__aexit__(*exc)

    @property
    def connected(self) -> bool:
        return self.observer.connection.connected.is_set()

    def _on_message(self, env: Envelope, topic: Topic, message: Incoming) -> None:
        self.state.interpret(env, topic)
        self.desk.on_message(env, topic)

    def snapshot_text(self) -> str:
        """The team snapshot as JSON text, computed at most once per change and second."""
        key = (self.state.version, int(time.time()))
        if self._cache is None or self._cache[0] != key:
            snap = self.state.snapshot()
            snap["connected"] = self.connected
            snap["user"] = self.username if self.signed_in else None
            self._cache = (key, json.dumps(snap, default=str))
        return self._cache[1]


async def check_login(
    endpoint: Endpoint,
    username: str | None,
    password: str | None,
    *,
    tls_context: Any = None,
    timeout: float = LOGIN_TIMEOUT_S,
) -> str | None:
    """Whether the broker accepts `username` / `password` (None: anonymous): None when
    it does, else a sentence saying why not. One connect and disconnect, nothing
    published or subscribed."""
    outcome, why = await _try_connect(endpoint, username, password, tls_context, timeout)
    return None if outcome == "accepted" else why


async def refuses_anonymous(endpoint: Endpoint, *, tls_context: Any = None) -> bool:
    """True when the broker answers but refuses a client without credentials (access
    control is on); False when it accepts one or cannot be reached."""
    outcome, _ = await _try_connect(endpoint, None, None, tls_context, LOGIN_TIMEOUT_S)
    return outcome == "refused"


async def _try_connect(
    endpoint: Endpoint,
    username: str | None,
    password: str | None,
    tls_context: Any,
    timeout: float,
) -> tuple[str, str]:
    import ssl

    import aiomqtt

    client = aiomqtt.Client(
        endpoint.host,
        endpoint.port,
        identifier=f"teamtree-web-login-{uuid.uuid4().hex[:8]}",
        username=username,
        password=password,
        timeout=timeout,
        transport=endpoint.transport,  # type: ignore[arg-type]
        websocket_path=endpoint.path,
        tls_context=tls_context or (ssl.create_default_context() if endpoint.tls else None),
    )
    try:
        async with client:
            return "accepted", ""
    except aiomqtt.MqttCodeError as exc:
        who = f"user {username!r}" if username else "anonymous clients"
        return "refused", f"the broker refused {who}: {exc} (wrong user or password?)"
    except (aiomqtt.MqttError, OSError, TimeoutError) as exc:
        return "unreachable", f"cannot reach the broker at {endpoint.url}: {exc}"
