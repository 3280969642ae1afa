"""What every driver shares, whatever its body: the robot-facing half of the contract.

A driver bridges one body (a simulated robot, a VDA 5050 AGV) to one robot agent. The
base takes the robot's behaviour commands (typed, see
``teamtree.agents.runtime.behaviour_wire``) from ``<agent>/command/<me>``, queues them
and carries them out one at a time in arrival order (``carry_out``, one bad command
never stops the loop); it cancels the running behaviour when the robot agent vanishes
(Last Will or OFFLINE) so a teammate can take the work over; it keeps the book of the
command the body accepted (``running``: command id, node, lease deadline, fencing
token) and publishes progress on ``<me>/progress``. A subclass adds only its body's
specifics: ``serve`` (talk to the body) and ``carry_out`` (one command).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any

from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.behaviour_wire import (
    COMMAND_CHANNEL,
    PROGRESS_CHANNEL,
    BehaviourCommand,
    BehaviourWireError,
    CommandRef,
    ExecuteCommand,
    Progress,
    RenewCommand,
    decode_command,
    to_wire,
)
from teamtree.agents.runtime.config import AgentSpec, TeamConfig
from teamtree.agents.runtime.team_view import Presence
from teamtree.broker import TeamtreeError
from teamtree.broker.envelope import Envelope
from teamtree.broker.hlc import wall_ms
from teamtree.broker.topics import Topic
from teamtree.hardware.lease_clocks import LeaseClocks


def driven_agent(spec: AgentSpec, config: TeamConfig) -> dict[str, str]:
    """``{"agent": ID}`` for the one robot agent of `config` whose ``driver`` (default
    ``<ID>-driver``) is the driver entry `spec`: the default of a driver's ``agent``
    key. Empty when no agent or several name it (the key must then be given)."""
    drives = [
        a.id
        for a in config.agents
        if a.id != spec.id and a.params.get("driver", f"{a.id}-driver") == spec.id
    ]
    return {"agent": drives[0]} if len(drives) == 1 else {}


@dataclass(slots=True)
class RunningCommand:
    """The execute the body accepted and has not ended, with its lease."""

    command_id: str
    node: str | None
    lease_ms: int | None = None  #: ms on the driver's clock by which the body must stop
    token: Any = None  #: the fencing token of the latest execute or renew

    def lapsed(self, now_ms: int) -> bool:
        """True when a lease was given and its deadline has passed."""
        return self.lease_ms is not None and now_ms >= self.lease_ms


class DriverAgent(Agent):
    """A driver for robot agent `agent`; see the module docstring."""

    def __init__(self, *args: Any, agent: str, cancel_on_agent_loss: bool = True, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.agent = agent
        self.cancel_on_agent_loss = cancel_on_agent_loss
        self.running: RunningCommand | None = None
        self._lease_clocks = LeaseClocks()
        self._commands: asyncio.Queue[tuple[str, BehaviourCommand]] = asyncio.Queue()

    @property
    def body_name(self) -> str:
        """The name progress bodies carry as ``robot`` (the body's own name)."""
        return self.agent

    # -- the body's specifics ------------------------------------------------------

    async def serve(self) -> None:
        """Talk to the body for as long as the driver runs (reconnecting as needed).
        Each driver (sim, VDA 5050, a plugin's) supplies it: the base has no body."""
        raise NotImplementedError(f"{type(self).__name__} must define serve()")

    async def carry_out(self, op: str, command: BehaviourCommand) -> None:
        """Carry out one command: `op` is execute, renew, cancel, pause or resume.
        Each driver supplies it (how its body takes commands)."""
        raise NotImplementedError(f"{type(self).__name__} must define carry_out()")

    # -- commands in ---------------------------------------------------------------

    async def setup(self) -> None:
        self.on_agents(COMMAND_CHANNEL, self._on_command, addressed=True)

    async def main(self) -> None:
        self.spawn(self._command_loop(), "commands")
        await self.serve()

    async def _on_command(self, env: Envelope, topic: Topic) -> None:
        if env.sender != self.agent or topic.recipient != self.id:
            self.stats["commands_ignored"] += 1
            return
        try:
            command = decode_command(env.kind, env.body)
        except BehaviourWireError as exc:
            self._drop("malformed", str(topic), env.sender, f"command: {exc}")
            await self._answer_malformed(env, exc)
            return
        self.log.debug("command.received", kind=env.kind, command_id=command.command_id)
        self._commands.put_nowait((env.kind.removeprefix("behaviour."), command))

    async def _answer_malformed(self, env: Envelope, exc: BehaviourWireError) -> None:
        """A malformed execute that names its command is answered ``failed``, so the
        robot gives the node back instead of waiting for it."""
        body = env.body
        if env.kind != "behaviour.execute" or not isinstance(body, dict):
            return
        command_id, node = body.get("command_id"), body.get("node")
        if isinstance(command_id, str):
            node = node if isinstance(node, str) else None
            await self.report("failed", command_id, node, reason=f"bad_command: {exc}")

    async def on_presence(self, agent_id: str, old: Presence, new: Presence) -> None:
        if (
            agent_id == self.agent
            and self.cancel_on_agent_loss
            and new in (Presence.CONNECTION_BROKEN, Presence.OFFLINE)
        ):
            self.log.info("driver.agent_lost", agent=agent_id, state=new.value)
            self._commands.put_nowait(("cancel", CommandRef()))

    async def _command_loop(self) -> None:
        while True:
            op, command = await self._commands.get()
            try:
                await self.carry_out(op, command)
            except Exception as exc:  # one bad command must not stop the driver
                self.log.error("driver.command_failed", op=op, error=repr(exc), exc_info=True)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is None or task.cancelling():
                    raise  # the driver stops
                # a cancellation from below (e.g. a body client closed under a pending
                # request when the world went away) is not ours: take the next command
                self.log.error("driver.command_failed", op=op, error="cancelled")

    # -- the book of the running command -------------------------------------------

    def lease_deadline_ms(self, command: ExecuteCommand | RenewCommand) -> int | None:
        """`command`'s lease deadline on this driver's wall clock (None: no lease),
        however far the robot's clock runs off (``teamtree.hardware.lease_clocks``)."""
        if command.lease_ms is None:
            return None
        return self._lease_clocks.deadline_ms(
            self.agent, command.clock, command.lease_ms, command.sent_ms, wall_ms()
        )

    def accepted(self, command: ExecuteCommand) -> RunningCommand:
        """The body accepted `command`: it is the running one now."""
        self.running = RunningCommand(
            command.command_id, command.node, self.lease_deadline_ms(command), command.token
        )
        return self.running

    def renewed(self, command: RenewCommand) -> bool:
        """Move the running command's lease on; False when `command` is not about it."""
        run = self.running
        if run is None or run.command_id != command.command_id:
            return False
        lease_ms = self.lease_deadline_ms(command)
        assert lease_ms is not None  # a renewal always carries one
        run.lease_ms = max(run.lease_ms or lease_ms, lease_ms)
        if command.token is not None:
            run.token = command.token
        return True

    def refused(self, op: str, command_id: str | None, reason: Any, **detail: Any) -> None:
        """Log that the body refused `op` (the body's own answer says why; `detail`
        what else helps read it)."""
        self.log.info("driver.refused", op=op, command_id=command_id, reason=reason, **detail)

    async def watch_leases(self, period_s: float) -> None:
        """Stop the body's behaviour once its lease lapsed (the robot agent stopped
        renewing: frozen or cut off), so the body never keeps acting after a teammate
        took the node over. Drivers whose bodies take leases spawn it from ``serve``."""
        while True:
            await asyncio.sleep(period_s)
            book = self.running
            if book is not None and book.lapsed(wall_ms()) and await self.lease_lapsed(book):
                self.log.warning("driver.lease_expired", command_id=book.command_id,
                                 lease_ms=book.lease_ms)  # fmt: skip

    async def lease_lapsed(self, book: RunningCommand) -> bool:
        """Cancel the body's behaviour for `book`, whose lease lapsed; True when a
        cancel went out now (False: it is cancelling already, or not the body's).
        Drivers that spawn ``watch_leases`` supply it."""
        raise NotImplementedError(f"{type(self).__name__} must define lease_lapsed()")

    # -- progress out --------------------------------------------------------------

    async def report_run(self, kind: str, run: Any, reason: str = "") -> None:
        """``report`` for `run` (anything with ``command_id`` and ``node``: a body's
        record of its behaviour, or the command itself), stamped now."""
        await self.report(kind, run.command_id, run.node, reason=reason or None, t=time.time())

    async def report(
        self,
        kind: str,
        command_id: str | None,
        node: str | None,
        *,
        ok: bool | None = None,
        reason: str | None = None,
        t: float | None = None,
    ) -> None:
        """Publish ``behaviour.<kind>`` for `command_id`; a finished or failed one
        is no longer running. ``ok`` defaults to ``kind != "failed"``."""
        run = self.running
        if run is not None and command_id == run.command_id and kind in ("finished", "failed"):
            self.running = None
        body = Progress(
            command_id, node, self.body_name, kind != "failed" if ok is None else ok, reason, t
        )
        self.log.info("driver.progress", kind=f"behaviour.{kind}", command_id=command_id,
                      reason=reason)  # fmt: skip
        with contextlib.suppress(TeamtreeError):
            await self.publish(PROGRESS_CHANNEL, f"behaviour.{kind}", to_wire(body))
