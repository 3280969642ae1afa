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
import json
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
from starlette.websockets import WebSocket

from teamtree.agents.observers.monitor import TeamObserver
from teamtree.agents.observers.web.missions import DeskError, mission_files, mission_from_toml
from teamtree.agents.observers.web.page_sockets import PageSockets, expected_by
from teamtree.agents.observers.web.person import HumanSessions
from teamtree.agents.observers.web.sign_ins import COOKIE, SignIns
from teamtree.agents.observers.web.state import WebState
from teamtree.agents.observers.web.watch import TeamWatch, check_login
from teamtree.agents.runtime.credentials import agent_credentials
from teamtree.broker import TopicError
from teamtree.broker.endpoint import Endpoint
from teamtree.broker.topics import validate_id

__all__ = ["STATIC", "WebServer"]

STATIC = Path(__file__).resolve().parent / "static"
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
        self.sign_ins = SignIns(endpoint, self.team, tls_context=tls_context)
        self.sessions = sessions or HumanSessions(
            endpoint,
            self.team,
            tls_context=tls_context,
            is_taken=self._taken,
            credentials=self._person_credentials,
        )
        self.sockets = PageSockets(
            self.team,
            self.sessions,
            watch_of=self._watch,
            reading=self._reading,
            any_person=any_person,
            login=login,
        )
        self.app = Starlette(
            routes=[
                Route("/login", self._login_page),
                Route("/api/login", self._sign_in, methods=["POST"]),
                Route("/api/logout", self._sign_out, methods=["POST"]),
                Route("/", self._team_page),
                Route("/human/{agent_id}", self._human_page),
                WebSocketRoute("/ws", self.sockets.team_ws),
                WebSocketRoute("/human/{agent_id}/ws", self.sockets.person_ws),
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
        await self.sign_ins.close()
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
        return self.sign_ins.watch(conn)

    def _reading(self, watch: TeamWatch) -> bool:
        """Whether `watch` still serves its browser: the shared one always, a sign-in's
        until it signs out."""
        return self.shared is not None or self.sign_ins.holds(watch)

    def _watches(self) -> list[TeamWatch]:
        return [self.shared] if self.shared is not None else list(self.sign_ins.watches.values())

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
            return self.sign_ins.credentials(agent_id)
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
        token = await self.sign_ins.add(username, password)
        log.info("web.signed_in", user=username)
        reply = JSONResponse({"user": username, "team": self.team})
        reply.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
        return reply

    async def _sign_out(self, request: Request) -> Response:
        watch = await self.sign_ins.remove(request.cookies.get(COOKIE))
        if watch is not None:
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

    def expected_by(self, person: str, state: WebState | None = None) -> list[str]:
        """The robots whose factsheet names `person` among the humans they model."""
        state = state or self.state
        return [] if state is None else expected_by(state, person)

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
