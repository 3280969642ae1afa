"""The ROS 2 half of the driver: one rclpy node spun by its own executor in its own thread.

The asyncio half never calls rclpy. It hands work in with ``RosSide.call`` (rclpy's
``Executor.create_task``, which queues a callable for the executor's thread and wakes
it: the ROS counterpart of ``call_soon_threadsafe``); the node hands everything it
learns out through ``emit``, which the driver makes a ``loop.call_soon_threadsafe``. All
that crosses is plain data: messages are turned into dicts (``interfaces.to_plain``)
before they leave this thread.

Events emitted (name, data):

- ``ready`` None; ``failed`` text (the node could not start);
- ``servers`` {behaviour: bool}: which actions and services are on the graph now;
- ``accepted`` ref; ``rejected`` ref; ``feedback`` (ref, dict);
- ``result`` (ref, status name, result dict, text); ``goal_error`` (ref, text);
- ``cancel_answer`` (ref, return code name);
- ``response`` (ref, dict, text); ``published`` ref;
- ``pose`` (x, y, z, yaw); ``battery`` dict; ``diagnostics`` list of (level, name, message).

rclpy is imported only here, when the thread starts, so teamtree imports without it.
"""

from __future__ import annotations

import math
from typing import Any

from teamtree.agents.runtime.ros_thread import Emit, RosNodeThread
from teamtree.drivers.ros2.interfaces import InterfaceError, describe, fill, resolve, to_plain
from teamtree.drivers.ros2.params import BehaviourSpec, TopicRef

#: action_msgs/msg/GoalStatus codes
STATUS_NAMES = {
    0: "unknown",
    1: "accepted",
    2: "executing",
    3: "canceling",
    4: "succeeded",
    5: "canceled",
    6: "aborted",
}
#: action_msgs/srv/CancelGoal return codes
CANCEL_CODES = {0: "none", 1: "rejected", 2: "unknown_goal_id", 3: "goal_terminated"}


def yaw_of(orientation: Any) -> float:
    """The yaw (rad) of a quaternion with fields x, y, z, w."""
    q = orientation
    return math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))


def find_pose(msg: Any) -> Any | None:
    """The ``geometry_msgs/Pose`` inside an odometry, pose or pose-with-covariance
    message (following ``pose`` fields down), or None."""
    for _ in range(4):
        if hasattr(msg, "position") and hasattr(msg, "orientation"):
            return msg
        msg = getattr(msg, "pose", None)
        if msg is None:
            return None
    return None


class RosSide(RosNodeThread):
    """One rclpy node with the action clients, service clients, publishers and
    subscriptions of one robot's config, in its own thread (see module docstring)."""

    def __init__(
        self,
        *,
        node_name: str,
        domain_id: int | None,
        behaviours: dict[str, BehaviourSpec],
        emit: Emit,
        pose: TopicRef | None = None,
        battery: TopicRef | None = None,
        diagnostics: TopicRef | None = None,
        check_period_s: float = 0.5,
    ):
        super().__init__(thread_name=f"ros2-{node_name}", emit=emit)
        self.node_name = node_name
        self.domain_id = domain_id
        self.behaviours = behaviours
        self.pose, self.battery, self.diagnostics = pose, battery, diagnostics
        self.check_period_s = check_period_s
        self._clients: dict[str, Any] = {}  # behaviour -> ActionClient / service client
        self._publishers: dict[str, Any] = {}
        self._types: dict[str, Any] = {}
        self._handles: dict[str, Any] = {}  # ref -> accepted goal handle
        self._cancel_wanted: set[str] = set()

    # -- the asyncio side's calls (thread-safe) ----------------------------------------

    def send_goal(self, ref: str, behaviour: str, values: dict[str, Any]) -> None:
        self.call(self._send_goal, ref, behaviour, values)

    def cancel_goal(self, ref: str) -> None:
        self.call(self._cancel_goal, ref)

    def call_service(self, ref: str, behaviour: str, values: dict[str, Any]) -> None:
        self.call(self._call_service, ref, behaviour, values)

    def publish(self, ref: str, behaviour: str, values: dict[str, Any]) -> None:
        self.call(self._publish, ref, behaviour, values)

    # -- the node's thread ----------------------------------------------------------------

    def _build(self) -> None:
        import rclpy
        from rclpy.action import ActionClient
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.node import Node
        from rclpy.qos import qos_profile_sensor_data

        self._context = rclpy.Context()
        if self.domain_id is None:
            rclpy.init(context=self._context)
        else:
            rclpy.init(context=self._context, domain_id=self.domain_id)
        node = self._node = Node(self.node_name, context=self._context)
        for key, spec in self.behaviours.items():
            cls = resolve(spec.type, spec.via if spec.via != "topic" else "msg")
            self._types[key] = cls
            if spec.via == "action":
                self._clients[key] = ActionClient(node, cls, spec.name)
            elif spec.via == "service":
                self._clients[key] = node.create_client(cls, spec.name)
            else:
                self._publishers[key] = node.create_publisher(cls, spec.name, 10)
        if self.pose is not None:
            node.create_subscription(
                resolve(self.pose.type, "msg"),
                self.pose.topic,
                self._on_pose,
                qos_profile_sensor_data,
            )
        if self.battery is not None:
            node.create_subscription(
                resolve(self.battery.type, "msg"), self.battery.topic, self._on_battery, 10
            )
        if self.diagnostics is not None:
            node.create_subscription(
                resolve(self.diagnostics.type, "msg"),
                self.diagnostics.topic,
                self._on_diagnostics,
                10,
            )
        node.create_timer(self.check_period_s, self._check_servers)
        self._executor = SingleThreadedExecutor(context=self._context)
        self._executor.add_node(node)

    def _check_servers(self) -> None:
        ready = {}
        for key, client in self._clients.items():
            spec = self.behaviours[key]
            ready[key] = (
                client.server_is_ready() if spec.via == "action" else client.service_is_ready()
            )
        self.emit("servers", ready)

    def _on_pose(self, msg: Any) -> None:
        pose = find_pose(msg)
        if pose is not None:
            p = pose.position
            self.emit("pose", (p.x, p.y, p.z, yaw_of(pose.orientation)))

    def _on_battery(self, msg: Any) -> None:
        plain = to_plain(msg)
        keep = ("percentage", "voltage", "power_supply_status", "present")
        self.emit("battery", {k: plain[k] for k in keep if k in plain} or plain)

    def _on_diagnostics(self, msg: Any) -> None:
        statuses = getattr(msg, "status", None)
        if statuses is None:
            return
        out = []
        for s in statuses:
            level = s.level if isinstance(s.level, int) else int.from_bytes(s.level, "little")
            out.append((level, str(s.name), str(s.message)))
        self.emit("diagnostics", out)

    # -- goals ------------------------------------------------------------------------------

    def _send_goal(self, ref: str, behaviour: str, values: dict[str, Any]) -> None:
        client, spec = self._clients[behaviour], self.behaviours[behaviour]
        try:
            goal = fill(self._types[behaviour].Goal(), values)
        except InterfaceError as exc:
            self.emit("goal_error", (ref, f"bad_goal: {exc}"))
            return
        if not client.server_is_ready():
            self.emit("goal_error", (ref, f"ros2_unavailable: no action server {spec.name}"))
            return
        future = client.send_goal_async(
            goal, feedback_callback=lambda fb: self.emit("feedback", (ref, to_plain(fb.feedback)))
        )
        future.add_done_callback(lambda f: self._goal_answered(ref, spec, f))

    def _goal_answered(self, ref: str, spec: BehaviourSpec, future: Any) -> None:
        exc = future.exception()
        if exc is not None:
            self.emit("goal_error", (ref, f"ros2_error: {spec.name}: {exc!r}"))
            return
        handle = future.result()
        if not handle.accepted:
            self._cancel_wanted.discard(ref)
            self.emit("rejected", ref)
            return
        self._handles[ref] = handle
        self.emit("accepted", (ref, bytes(handle.goal_id.uuid).hex()))
        if ref in self._cancel_wanted:
            self._cancel_goal(ref)
        handle.get_result_async().add_done_callback(lambda f: self._result(ref, spec, f))

    def _result(self, ref: str, spec: BehaviourSpec, future: Any) -> None:
        self._handles.pop(ref, None)
        self._cancel_wanted.discard(ref)
        exc = future.exception()
        if exc is not None:
            self.emit("goal_error", (ref, f"ros2_error: {spec.name}: {exc!r}"))
            return
        response = future.result()
        status = STATUS_NAMES.get(response.status, str(response.status))
        self.emit("result", (ref, status, to_plain(response.result), describe(response.result)))

    def _cancel_goal(self, ref: str) -> None:
        handle = self._handles.get(ref)
        if handle is None:  # not answered yet: cancel once it is accepted
            self._cancel_wanted.add(ref)
            return
        self._cancel_wanted.discard(ref)
        future = handle.cancel_goal_async()

        def answered(f: Any) -> None:
            code = f.result().return_code if f.exception() is None else -1
            self.emit("cancel_answer", (ref, CANCEL_CODES.get(code, str(code))))

        future.add_done_callback(answered)

    # -- services and topics ---------------------------------------------------------------

    def _call_service(self, ref: str, behaviour: str, values: dict[str, Any]) -> None:
        client, spec = self._clients[behaviour], self.behaviours[behaviour]
        try:
            request = fill(self._types[behaviour].Request(), values)
        except InterfaceError as exc:
            self.emit("goal_error", (ref, f"bad_goal: {exc}"))
            return
        if not client.service_is_ready():
            self.emit("goal_error", (ref, f"ros2_unavailable: no service {spec.name}"))
            return
        self.emit("accepted", (ref, None))

        def answered(f: Any) -> None:
            if f.exception() is not None:
                self.emit("goal_error", (ref, f"ros2_error: {spec.name}: {f.exception()!r}"))
            else:
                self.emit("response", (ref, to_plain(f.result()), describe(f.result())))

        client.call_async(request).add_done_callback(answered)

    def _publish(self, ref: str, behaviour: str, values: dict[str, Any]) -> None:
        try:
            msg = fill(self._types[behaviour](), values)
        except InterfaceError as exc:
            self.emit("goal_error", (ref, f"bad_goal: {exc}"))
            return
        self._publishers[behaviour].publish(msg)
        self.emit("published", ref)
