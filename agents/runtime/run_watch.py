"""A run's own passive view of its team: who is online, and what the mission did.

`teamtree run` is no member (it says no presence); it subscribes read-only to the
whole team to see its children come ONLINE, to feed the mission's outcome from what
the agents say and to hear its observers' factsheets, and it publishes the verdict on
the same connection. The waits before the members start (for the services, and for
the people taking members' places) wait on what this view sees, so they live here.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import TYPE_CHECKING

from teamtree.agents.runtime.credentials import NO_ACCESS_CONTROL, observer_credentials
from teamtree.agents.runtime.mission import UNSCOPED_CHANNELS, foreign, mission_of
from teamtree.agents.runtime.run_output import PresenceLines
from teamtree.broker import TeamtreeError, WireError
from teamtree.broker.connection import Connection, Incoming
from teamtree.broker.endpoint import Endpoint
from teamtree.broker.envelope import decode
from teamtree.broker.tls import TlsSettings, client_context

if TYPE_CHECKING:
    from teamtree.agents.runtime.launcher import Launcher


class RunWatch:
    """The run's watch of the team (see module docstring)."""

    def __init__(self, launcher: Launcher):
        self._launcher = launcher
        #: the watch's connection, while it is open
        self.connection: Connection | None = None
        self._task: asyncio.Task[None] | None = None
        self.online: set[str] = set()  #: agents seen going ONLINE live during this run
        self._presence_changed = asyncio.Event()
        #: the run says each presence change once (the agents' own lines are not echoed)
        self._presence_lines = PresenceLines()

    async def start(self, endpoint: Endpoint) -> None:
        """Watch the team passively (no presence: not a member) to tell who did what."""
        run = self._launcher
        tls = TlsSettings.from_env()
        login = observer_credentials("run")
        if not login:
            run.say("warning: " + NO_ACCESS_CONTROL.format(who="this run"))
        self.connection = Connection(
            endpoint,
            client_id=f"teamtree-{run.config.team}-run-{uuid.uuid4().hex[:8]}",
            on_message=self.watched,
            clean_session=True,
            tls_context=client_context(tls) if tls else None,
            **login,  # read-only rights suffice, as for `monitor`
        )
        await self.connection.subscribe(f"teamtree/v1/{run.config.team}/#")
        self._task = asyncio.create_task(self.connection.run(), name="teamtree[run].watch")

    async def watched(self, message: Incoming) -> None:
        """One message of the team: an observer's factsheet, a presence change of this
        mission's, or anything else of the mission for its outcome."""
        run = self._launcher
        parts = message.topic.split("/")
        if len(parts) < 5:
            return
        agent, channel = parts[3], parts[4]
        try:
            env = decode(message.payload, topic=message.topic)
        except WireError:
            return
        if agent != "_" and env.sender != agent:
            return
        if channel == "factsheet" and agent in run.observers.ids:
            if not foreign(env.body, run.mission_id if run.scoped else None):
                run.observers.saw_factsheet(agent, env.body)
            return
        if channel == "connection" and not message.retain and isinstance(env.body, dict):
            if run.scoped and mission_of(env.body) != run.mission_id:
                return  # not one of our children (e.g. another mission's, replayed)
            state = env.body.get("state")
            if state == "ONLINE":
                self.online.add(agent)
            else:
                self.online.discard(agent)
            if (said := self._presence_lines.change(agent, str(state))) is not None:
                run.say(said)
            self._presence_changed.set()
            return
        if channel not in UNSCOPED_CHANNELS and foreign(env.body, run.mission_id):
            return
        run.outcome.feed(env.kind, env.sender, env.body)

    async def stop(self) -> None:
        """Close the run's own watch (idempotent)."""
        if self.connection is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.connection.close(), 3.0)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        self.connection, self._task = None, None

    async def wait_for_people(self, interrupted: asyncio.Event) -> None:
        """Members left out (``without``) are people taking their places: wait until
        each is online (``teamtree human --id ID`` or its web page) before starting the
        other members, so the robots do not do the person's share first. Ctrl-C
        (`interrupted`) ends the wait (and the run)."""
        run = self._launcher
        without = run.without
        if not without:
            return
        for name in sorted(without):
            run.say(
                f"not starting {name}: take its place with `teamtree human --id {name}` "
                f"(or the web page /human/{name}) from another terminal here"
            )
        said = ""
        while not without <= self.online and not interrupted.is_set():
            missing = ", ".join(sorted(without - self.online))
            if missing != said:
                run.say(f"waiting for {missing} to join before starting the members")
                said = missing
            self._presence_changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._presence_changed.wait(), 1.0)
        if not interrupted.is_set():
            run.say(f"{', '.join(sorted(without))} joined; starting the members")

    async def wait_services(self, within: float = 60.0) -> None:
        """Wait until every service is online (so subscribed) before members start."""
        run = self._launcher
        names = {s.id for s in run.config.services}
        optional = run.observers.optional
        loop = asyncio.get_running_loop()
        assert self.connection is not None
        try:
            await asyncio.wait_for(self.connection.connected.wait(), 10.0)
        except TimeoutError:
            run.say(
                "cannot watch the team (does the broker refuse the `run` user?); "
                "starting the members without waiting for the services"
            )
            return
        deadline = loop.time() + min(within, run.timeout_s)
        while not names <= self.online:
            dead = [c for c in run.children if c.name in names and c.returncode is not None]
            for child in [c for c in dead if c.name in optional]:  # go on without it
                run.observers.exited(child)
                names.discard(child.name)
                dead.remove(child)
            left = deadline - loop.time()
            missing = sorted(names - self.online)
            if not missing and not dead:
                break
            if not dead and left <= 0 and set(missing) <= set(optional):
                run.say(
                    f"optional observer(s) not online after {within:.0f} s: "
                    f"{', '.join(missing)}; starting the members without them"
                )
                return
            if dead or left <= 0:
                gone = ", ".join(c.name for c in dead)
                why = f"exited: {gone}" if dead else f"not online after {within:.0f} s"
                waiting = ", ".join(missing)
                raise TeamtreeError(f"services not ready ({why}); waiting for: {waiting}")
            self._presence_changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._presence_changed.wait(), min(left, 0.5))
        run.say(f"services online: {', '.join(sorted(names))}; starting the members")
