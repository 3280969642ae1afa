"""The bridge from a team into ROS 2: an observer of the team on one side, an rclpy
node on the other.

On the team's side it reads the team as the web view does, through a ``TeamWatch``:
a passive ``TeamObserver`` (no presence, no Last Will, never a team member; its
broker user needs read rights, and write rights on its own ``<login>/missions`` to
submit) feeding the web view's picture of the team (``WebState``), and the missions
desk (``MissionDesk``) that hands missions to the team's mission queue, the path
``teamtree submit`` takes. Nothing in the team waits for it: when it dies, missions go on.

Every ``period_s`` it turns the picture into markers (``scene``), statuses
(``health``) and the missions' JSON (``mission_state``) and hands them to the node
(``node.BridgeNode``), which publishes them in the fixed frame. A message on the
submit topic comes back from the node's thread through ``loop.call_soon_threadsafe``;
it is read and checked (``intake``), sent to the queue, and the answer (accepted with
the mission's id, or refused naming the field) goes out on the result topic. A bad
request never stops the bridge.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import structlog

from teamtree.agents.observers.ros2.health import agent_statuses
from teamtree.agents.observers.ros2.intake import RequestError, accepted, read_request, refused
from teamtree.agents.observers.ros2.mission_state import mission_state_text
from teamtree.agents.observers.ros2.node import BridgeNode, BridgeTopics, node_name
from teamtree.agents.observers.ros2.scene import scene_markers
from teamtree.agents.observers.web.missions import DeskError
from teamtree.agents.observers.web.watch import TeamWatch
from teamtree.broker import TeamtreeError
from teamtree.broker.endpoint import Endpoint

__all__ = ["Ros2Bridge"]

log = structlog.get_logger("teamtree.ros2_bridge")

#: seconds between two publications of the scene, the statuses and the missions
PERIOD_S = 1.0
#: seconds the ROS 2 node may take to start (DDS discovery set-up on a loaded machine)
NODE_START_S = 30.0


class Ros2Bridge:
    """``async with Ros2Bridge(...) as bridge: await bridge.run(stop)``."""

    def __init__(
        self,
        endpoint: Endpoint,
        team: str,
        *,
        topics: BridgeTopics,
        requester: str,
        username: str | None = None,
        password: str | None = None,
        tls_context: Any = None,
        domain_id: int | None = None,
        period_s: float = PERIOD_S,
    ):
        self.team = team
        self.endpoint = endpoint
        self.period_s = period_s
        self.watch = TeamWatch(
            endpoint,
            team,
            username=username,
            password=password,
            tls_context=tls_context,
            client_prefix="ros2-bridge",
            requester=requester,
        )
        self.state, self.desk = self.watch.state, self.watch.desk
        self.node = BridgeNode(
            name=node_name(team), topics=topics, emit=self._from_ros, domain_id=domain_id
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._failed: asyncio.Future[str] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> Ros2Bridge:
        self._loop = asyncio.get_running_loop()
        self._failed = self._loop.create_future()
        await self.watch.__aenter__()
        started = await asyncio.to_thread(self.node.start, NODE_START_S)
        if self._failed.done() or not started:
            why = self._failed.result() if self._failed.done() else f"not in {NODE_START_S:g} s"
            await asyncio.to_thread(self.node.stop)
            await self.watch.__aexit__(None, None, None)
            raise TeamtreeError(f"the bridge's ROS 2 node did not start: {why}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.to_thread(self.node.stop)
        await self.watch.__aexit__(*exc)

    async def run(self, stop: asyncio.Event) -> None:
        """Publish every ``period_s`` until `stop` is set; TeamtreeError when the ROS 2
        node stops working."""
        assert self._failed is not None
        while not stop.is_set():
            self.publish()
            waits = [asyncio.ensure_future(stop.wait()), self._failed]
            await asyncio.wait(waits, timeout=self.period_s, return_when=asyncio.FIRST_COMPLETED)
            waits[0].cancel()
            if self._failed.done():
                raise TeamtreeError(f"the bridge's ROS 2 node failed: {self._failed.result()}")

    def publish(self) -> None:
        """Hand the node the scene, the statuses and the missions, as they are now. A
        picture that cannot be drawn is logged and skipped: the bridge goes on."""
        try:
            self._publish()
        except Exception as exc:
            log.error("ros2_bridge.unpublished", error=repr(exc), exc_info=True)

    def _publish(self) -> None:
        snap = self.state.snapshot()
        snap["connected"] = self.watch.connected
        heartbeats = {a: row.heartbeat for a, row in self.state.monitor.agents.items()}
        statuses = agent_statuses(snap, heartbeats, team=self.team, connected=snap["connected"],
                                  broker_url=self.endpoint.url)  # fmt: skip
        self.node.publish_scene(scene_markers(snap), statuses, mission_state_text(snap))

    # -- the team's side ----------------------------------------------------------------

    # -- the ROS 2 side ---------------------------------------------------------------------

    def _from_ros(self, name: str, data: Any) -> None:
        """An event of the node's thread (called there): hand it to the loop."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._on_ros, name, data)

    def _on_ros(self, name: str, data: Any) -> None:
        if name == "failed" and self._failed is not None and not self._failed.done():
            self._failed.set_result(str(data))
        elif name == "request":
            task = asyncio.create_task(self._submit(str(data)))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _submit(self, text: str) -> None:
        """Read, check and submit one request from ROS 2; publish the answer."""
        try:
            request = read_request(text)
        except RequestError as exc:
            log.info("ros2_bridge.refused", field=exc.field, error=str(exc))
            self.node.answer(refused(exc.request_id, exc.field, str(exc)))
            return
        try:
            reply = await self.desk.submit(request.mission)
        except DeskError as exc:
            log.info("ros2_bridge.refused", field=exc.field, error=str(exc))
            self.node.answer(refused(request.request_id, exc.field, str(exc)))
            return
        except Exception as exc:  # the broker connection broke under the request
            log.warning("ros2_bridge.unsent", error=repr(exc))
            self.node.answer(refused(request.request_id, None, f"not sent: {exc}"))
            return
        log.info("ros2_bridge.submitted", id=reply.get("id"), by=self.desk.requester)
        self.node.answer(accepted(request.request_id, reply, self.desk.requester))
