"""The web server: a starlette app served by uvicorn, reading the team through a
passive broker client (``TeamObserver``: no presence, never a team member) and
pushing JSON to the pages over websockets.

Routes::

    GET /                     the team page (static/team.html)
    GET /human/<id>           a person's page (static/human.html)
    WS  /ws                   team snapshots (``WebState.snapshot``), on change, ≥ 1/s
    WS  /human/<id>/ws        the person's view (``WebHuman.view``) and their taps
    GET /api/state            the team snapshot as JSON (scripts, health checks)
    GET /api/human/<id>       a hosted person's view as JSON (404 when not hosted)
    GET /healthz              200 once the broker is connected, else 503
    GET /api/missions/files   the mission files the page offers to pick from
    POST /api/missions        submit a mission ({"toml": text} or {"file": name})
    POST /api/missions/<id>/cancel   cancel a queued or running mission
    GET /login, POST /api/login, POST /api/logout   sign in and out (``login=True``)

With ``login=True`` nothing is read before a browser signs in: each sign-in checks the
user and password with the broker and gets its own reader of the team connected as
that user (``TeamWatch``), so a page shows what the broker lets that user read.
    GET /static/...           the page's own JS and CSS (nothing from a CDN)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import structlog
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from teamtree.agents.observers.monitor import TeamObserver
from teamtree.agents.observers.web.missions import DeskError, mission_files, mission_from_toml
from teamtree.agents.observers.web.person import HumanSessions
from teamtree.agents.observers.web.state import WebState
from teamtree.agents.observers.web.watch import TeamWatch, check_login
from teamtree.agents.runtime.credentials import agent_credentials
from teamtree.broker import TopicError
from teamtree.broker.endpoint import Endpoint
from teamtree.broker.topics import validate_id

__all__ = ["STATIC", "WebServer"]

STATIC = Path(__file__).resolve().parent / "static"
#: seconds between checks for news to push; a page also gets a push at least every second
PUSH_S = 0.2
SEND_TIMEOUT_S = 5.0
#: the cookie naming a browser's sign-in
COOKIE = "teamtree_login"
#: sign-ins kept at once (the oldest is signed out beyond)
MAX_LOGINS = 32
#: the websocket close code that sends a page to the sign-in form
CLOSE_LOGIN = 4401
#: seconds a refused sign-in waits before it answers
REFUSED_DELAY_S = 1.0
log = structlog.get_logger("teamtree.web")


class WebServer:
    """The web view of one team. ``async with WebServer(...) as web:`` connects to the
    broker; ``web.app`` is the ASGI app; ``await web.serve(host, port)`` serves it
    until the process is told to stop (SIGINT / SIGTERM)."""

    def __init__(
        self,
        endpoint: Endpoint,
        team: str,
        *,
        username: str | None = None,
        password: str | None = None,
        tls_context: Any = None,
        sessions: HumanSessions | None = None,
        any_person: bool = False,
        missions_dir: Path | None = None,
        login: bool = False,
    ):
        self.team = validate_id(team, "team")
        self.endpoint = endpoint
        self.any_person = any_person
        self.missions_dir = missions_dir
        self.login = login
        self.tls_context = tls_context
        #: the one reader of every page, without a login
        self.shared: TeamWatch | None = None
        if not login:
            self.shared = TeamWatch(
                endpoint, self.team, username=username, password=password, tls_context=tls_context
            )
        self.logins: OrderedDict[str, TeamWatch] = OrderedDict()  # cookie -> reader
        self._person_logins: dict[str, dict[str, str]] = {}  # person -> their sign-in
        self.sessions = sessions or HumanSessions(
            endpoint,
            self.team,
            tls_context=tls_context,
            is_taken=self._taken,
            credentials=self._person_credentials,
        )
        self.app = Starlette(
            routes=[
                Route("/login", self._login_page),
                Route("/api/login", self._sign_in, methods=["POST"]),
                Route("/api/logout", self._sign_out, methods=["POST"]),
                Route("/", self._team_page),
                Route("/human/{agent_id}", self._human_page),
                WebSocketRoute("/ws", self._team_ws),
                WebSocketRoute("/human/{agent_id}/ws", self._human_ws),
                Route("/api/state", self._api_state),
                Route("/api/human/{agent_id}", self._api_human),
                Route("/healthz", self._health),
                Route("/api/missions/files", self._mission_files),
                Route("/api/missions", self._submit, methods=["POST"]),
                Route("/api/missions/{mission_id}/cancel", self._cancel, methods=["POST"]),
                Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
            ]
        )

    async def __aenter__(self) -> WebServer:
        if self.shared is not None:
            await self.shared.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.sessions.close()
        for watch in list(self.logins.values()):
            await watch.__aexit__(None, None, None)
        self.logins.clear()
        if self.shared is not None:
            await self.shared.__aexit__(*exc)

    # the shared reader's parts, for callers from before sign-ins (None with a login)
    @property
    def observer(self) -> TeamObserver | None:
        return None if self.shared is None else self.shared.observer

    @property
    def state(self) -> WebState | None:
        return None if self.shared is None else self.shared.state

    def _watch(self, conn: Request | WebSocket) -> TeamWatch | None:
        """The reader for this browser: the shared one, or its sign-in's (None: not
        signed in)."""
        if self.shared is not None:
            return self.shared
        token = conn.cookies.get(COOKIE)
        return self.logins.get(token) if token else None

    def _watches(self) -> list[TeamWatch]:
        return [self.shared] if self.shared is not None else list(self.logins.values())

    def _taken(self, agent_id: str) -> bool:
        for watch in self._watches():
            row = watch.state.monitor.agents.get(agent_id)
            if row is not None and row.presence == "ONLINE":
                return True
        return False

    def _person_credentials(self, agent_id: str) -> dict[str, str]:
        """A person's agent's broker credentials: with sign-ins, that person's own
        (they signed in as themselves); else from the environment, as ``agent``."""
        if self.login:
            return self._person_logins.get(agent_id, {})
        return agent_credentials(agent_id)

    def snapshot_text(self) -> str:
        """The shared reader's team snapshot as JSON text."""
        if self.shared is None:
            raise RuntimeError("with sign-ins there is no shared snapshot")
        return self.shared.snapshot_text()

    # -- signing in ------------------------------------------------------------------

    async def _login_page(self, request: Request) -> Response:
        if not self.login:
            return RedirectResponse("/", status_code=303)
        return FileResponse(STATIC / "login.html")

    async def _sign_in(self, request: Request) -> Response:
        """Check the user with the broker and give this browser its own reader."""
        if not self.login:
            return JSONResponse({"error": "this server has no sign-in (started without --login)"},
                                status_code=404)  # fmt: skip
        try:
            body = await _json_body(request)
        except DeskError as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status)
        username, password = body.get("username"), body.get("password")
        if not isinstance(username, str) or not username or not isinstance(password, str):
            return JSONResponse({"error": "give a broker user name and its password"},
                                status_code=400)  # fmt: skip
        refused = await check_login(self.endpoint, username, password, tls_context=self.tls_context)
        if refused is not None:
            log.info("web.sign_in_refused", user=username, error=refused)
            await asyncio.sleep(REFUSED_DELAY_S)  # slows password guessing through the page
            return JSONResponse({"error": refused}, status_code=401)
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
        self.logins[token] = watch
        with contextlib.suppress(TopicError):
            self._person_logins[validate_id(username, "user")] = {
                "username": username,
                "password": password,
            }
        while len(self.logins) > MAX_LOGINS:
            _, oldest = self.logins.popitem(last=False)
            await oldest.__aexit__(None, None, None)
        log.info("web.signed_in", user=username)
        reply = JSONResponse({"user": username, "team": self.team})
        reply.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
        return reply

    async def _sign_out(self, request: Request) -> Response:
        token = request.cookies.get(COOKIE)
        watch = self.logins.pop(token, None) if token else None
        if watch is not None:
            await watch.__aexit__(None, None, None)
            log.info("web.signed_out", user=watch.username)
        reply = JSONResponse({"signed_out": watch is not None})
        reply.delete_cookie(COOKIE, path="/")
        return reply

    def _to_login(self, request: Request) -> Response:
        return RedirectResponse(f"/login?next={request.url.path}", status_code=303)

    # -- pages -----------------------------------------------------------------------

    async def _team_page(self, request: Request) -> Response:
        if self._watch(request) is None:
            return self._to_login(request)
        return FileResponse(STATIC / "team.html")

    async def _human_page(self, request: Request) -> Response:
        try:
            validate_id(request.path_params["agent_id"], "human id")
        except TopicError as exc:
            return HTMLResponse(f"<p>bad person id: {_escape(exc.reason)}</p>", status_code=400)
        if self._watch(request) is None:
            return self._to_login(request)
        return FileResponse(STATIC / "human.html")

    async def _api_state(self, request: Request) -> Response:
        watch = self._watch(request)
        if watch is None:
            return _sign_in_first()
        return Response(watch.snapshot_text(), media_type="application/json")

    async def _api_human(self, request: Request) -> Response:
        if self._watch(request) is None:
            return _sign_in_first()
        agent = self.sessions.agents.get(request.path_params["agent_id"])
        if agent is None:
            return JSONResponse({"error": "no such person on this server"}, status_code=404)
        return JSONResponse(json.loads(json.dumps(agent.view(), default=str)))

    async def _health(self, request: Request) -> Response:
        if self.shared is None:  # nothing is read before a sign-in: the server is up
            return JSONResponse({"broker": None, "team": self.team, "login": True})
        ok = self.shared.connected
        return JSONResponse({"broker": ok, "team": self.team}, status_code=200 if ok else 503)

    # -- missions (the dispatch protocol) ------------------------------------------------

    async def _mission_files(self, request: Request) -> Response:
        if self._watch(request) is None:
            return _sign_in_first()
        files = mission_files(self.missions_dir)
        return JSONResponse({"directory": str(self.missions_dir or ""), "files": files})

    async def _submit(self, request: Request) -> Response:
        """Submit a mission pasted or uploaded as TOML, or picked by file name."""
        watch = self._watch(request)
        if watch is None:
            return _sign_in_first()
        try:
            body = await _json_body(request)
            if isinstance(body.get("file"), str):
                files = mission_files(self.missions_dir)
                if body["file"] not in files:
                    raise DeskError(
                        f"no mission file {body['file']!r} here (have: "
                        f"{', '.join(files) or 'none'})",
                        status=404,
                    )
                mission = mission_from_toml(files[body["file"]], body["file"])
            elif isinstance(body.get("toml"), str):
                mission = mission_from_toml(body["toml"], str(body.get("name") or "<pasted>"))
            else:
                raise DeskError('send {"toml": "<a mission file\'s text>"} or {"file": "<name>"}')
            accepted = await watch.desk.submit(mission)
        except DeskError as exc:
            log.info("web.mission_refused", error=str(exc), field=exc.field)
            return JSONResponse({"error": str(exc), "field": exc.field}, status_code=exc.status)
        log.info("web.mission_submitted", id=accepted.get("id"), queue=accepted.get("queue"))
        return JSONResponse(accepted)

    async def _cancel(self, request: Request) -> Response:
        mission = request.path_params["mission_id"]
        watch = self._watch(request)
        if watch is None:
            return _sign_in_first()
        try:
            await _json_body(request)
            validate_id(mission, "mission id")
            answer = await watch.desk.cancel(mission)
        except TopicError as exc:
            return JSONResponse({"error": exc.reason, "field": "id"}, status_code=400)
        except DeskError as exc:
            return JSONResponse({"error": str(exc), "field": exc.field}, status_code=exc.status)
        log.info("web.mission_cancel", id=mission, state=answer.get("state"))
        return JSONResponse(answer)

    # -- websockets --------------------------------------------------------------------

    async def _team_ws(self, ws: WebSocket) -> None:
        await ws.accept()
        watch = self._watch(ws)
        if watch is None:
            await ws.close(code=CLOSE_LOGIN)
            return
        last, sent_at = "", 0.0
        try:
            while True:
                if self.shared is None and watch not in self.logins.values():
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

    def expected_by(self, person: str, state: WebState | None = None) -> list[str]:
        """The robots whose factsheet names `person` among the humans they model."""
        state = state or self.state
        if state is None:
            return []
        return sorted(
            agent
            for agent, sheet in state.factsheets.items()
            if isinstance(sheet.get("humans"), list) and person in sheet["humans"]
        )

    async def _join(self, ws: WebSocket, person: str, watch: TeamWatch) -> bool:
        """Until the person taps "join": show who expects them. Joining is allowed when
        a robot of the team models this person (its factsheet's ``humans``), or with
        ``--any-person``; a stray visit to /human/<typo> never adds a team member."""
        receive: asyncio.Future[str] | None = None
        try:
            while True:
                expected = self.expected_by(person, watch.state)
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

    async def _human_ws(self, ws: WebSocket) -> None:
        await ws.accept()
        watch = self._watch(ws)
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
        reader = asyncio.create_task(self._human_taps(ws, agent.id))
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

    async def _human_taps(self, ws: WebSocket, agent_id: str) -> None:
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

    async def serve(self, host: str = "127.0.0.1", port: int = 8080, ready: Any = None) -> None:
        """Serve the app with uvicorn until SIGINT / SIGTERM; `ready` (a callable) is
        called with the URL once the socket listens (port 0: the port the system
        picked). Raises OSError when the port is taken."""
        import uvicorn

        config = uvicorn.Config(self.app, host=host, port=port, log_level="warning", lifespan="off")
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve(), name="teamtree[web].uvicorn")
        while not server.started and not task.done():
            await asyncio.sleep(0.05)
        if task.done():
            task.result()
            raise OSError(f"the web server did not start on {host}:{port} (is the port taken?)")
        if ready is not None:
            ready(f"http://{host}:{_bound_port(server, port)}/")
        await task


def _bound_port(server: Any, asked: int) -> int:
    """The port uvicorn listens on: `asked`, or the one the system picked for 0."""
    for listener in getattr(server, "servers", []):
        for sock in listener.sockets:
            return int(sock.getsockname()[1])
    return asked


def _tap(text: str) -> dict[str, Any]:
    """A tap from the page as a map, or {} when it is not a JSON object."""
    try:
        tap = json.loads(text)
    except ValueError:
        return {}
    return tap if isinstance(tap, dict) else {}


async def _json_body(request: Request) -> dict[str, Any]:
    """A POST's JSON object. Only ``application/json`` is taken, which a page of
    another site cannot send without the browser asking first (CORS), so a link or a
    form elsewhere cannot submit or cancel missions."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise DeskError("send the request as application/json", status=415)
    try:
        body = json.loads(await request.body() or b"{}")
    except ValueError as exc:
        raise DeskError(f"the request body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise DeskError("the request body must be a JSON object")
    return body


def _sign_in_first() -> Response:
    return JSONResponse({"error": "sign in first (POST /api/login)"}, status_code=401)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
