"""The ROS 2 side of the bridge: one rclpy node, spun by its own executor in its own
thread, that publishes what the asyncio side hands it and hands back what ROS 2 sends.

The asyncio side never calls rclpy: it hands work in with ``BridgeNode.call`` (rclpy's
``Executor.create_task``, which queues a callable for the executor's thread and wakes
it) and gets events back through ``emit``, which the bridge makes a
``loop.call_soon_threadsafe``. Only plain data crosses: markers, statuses and JSON
text in, the submit topic's text out. rclpy and the message packages are imported
only when the thread starts, so teamtree imports without ROS 2.

Topics (``<ns>`` is ``BridgeTopics.namespace``, default ``/teamtree``):

=============================  ==================================  =====================
``<ns>/markers``               ``visualization_msgs/MarkerArray``  reliable, transient
                                                                   local (a late RViz
                                                                   gets the scene)
``<ns>/diagnostics``           ``diagnostic_msgs/DiagnosticArray`` reliable, volatile
``<ns>/mission``               ``std_msgs/String`` (JSON)          reliable, transient
                                                                   local
``<ns>/submit`` (subscribed)   ``std_msgs/String`` (JSON)          reliable
``<ns>/submit_result``         ``std_msgs/String`` (JSON)          reliable, transient
                                                                   local, last 10
=============================  ==================================  =====================

Events emitted (name, data): ``ready`` None; ``failed`` text (the node could not
start, or its executor stopped); ``request`` text (a message on the submit topic).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from teamtree.agents.runtime.ros_thread import Emit, RosNodeThread

__all__ = ["BridgeNode", "BridgeTopics", "node_name"]

#: answers kept for a subscriber that comes late
RESULTS_KEPT = 10


@dataclass(frozen=True)
class BridgeTopics:
    """Where the bridge publishes and listens, and the frame of its markers."""

    namespace: str = "/teamtree"
    frame: str = "map"
    diagnostics: str | None = None  #: default ``<namespace>/diagnostics``

    def topic(self, name: str) -> str:
        return f"{self.namespace.rstrip('/')}/{name}"

    @property
    def diagnostics_topic(self) -> str:
        return self.diagnostics or self.topic("diagnostics")


def node_name(team: str) -> str:
    """A ROS 2 node name for the bridge of `team` (letters, digits and ``_`` only)."""
    return "teamtree_bridge_" + re.sub(r"[^A-Za-z0-9_]", "_", team)


class BridgeNode(RosNodeThread):
    """The bridge's rclpy node in its own thread (see the module docstring)."""

    def __init__(
        self, *, name: str, topics: BridgeTopics, emit: Emit, domain_id: int | None = None
    ):
        super().__init__(thread_name=f"ros2-{name}", emit=emit)
        self.name = name
        self.topics = topics
        self.domain_id = domain_id
        self._pub: dict[str, Any] = {}
        self._msgs: Any = None  # the message modules, once imported

    # -- the asyncio side's calls (thread-safe) ----------------------------------------

    def publish_scene(
        self, markers: list[dict[str, Any]], statuses: list[dict[str, Any]], mission: str
    ) -> None:
        """Publish the markers (after a DELETEALL), the statuses and the mission text."""
        self.call(self._publish_scene, markers, statuses, mission)

    def answer(self, text: str) -> None:
        """Publish `text` on the result topic."""
        self.call(self._answer, text)

    # -- the node's thread ----------------------------------------------------------------

    def _build(self) -> None:
        import diagnostic_msgs.msg
        import rclpy
        import std_msgs.msg
        import visualization_msgs.msg
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.node import Node
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

        self._msgs = (visualization_msgs.msg, diagnostic_msgs.msg, std_msgs.msg)
        self._context = rclpy.Context()
        if self.domain_id is None:
            rclpy.init(context=self._context)
        else:
            rclpy.init(context=self._context, domain_id=self.domain_id)
        node = self._node = Node(self.name, context=self._context)
        reliable = ReliabilityPolicy.RELIABLE
        local = DurabilityPolicy.TRANSIENT_LOCAL
        latched = QoSProfile(depth=1, reliability=reliable, durability=local)
        kept = QoSProfile(depth=RESULTS_KEPT, reliability=reliable, durability=local)
        t = self.topics
        self._pub = {
            "markers": node.create_publisher(
                visualization_msgs.msg.MarkerArray, t.topic("markers"), latched
            ),
            "diagnostics": node.create_publisher(
                diagnostic_msgs.msg.DiagnosticArray, t.diagnostics_topic, 10
            ),
            "mission": node.create_publisher(std_msgs.msg.String, t.topic("mission"), latched),
            "result": node.create_publisher(std_msgs.msg.String, t.topic("submit_result"), kept),
        }
        node.create_subscription(
            std_msgs.msg.String,
            t.topic("submit"),
            lambda msg: self.emit("request", str(msg.data)),
            QoSProfile(depth=10, reliability=reliable),
        )
        self._executor = SingleThreadedExecutor(context=self._context)
        self._executor.add_node(node)

    def _publish_scene(
        self, markers: list[dict[str, Any]], statuses: list[dict[str, Any]], mission: str
    ) -> None:
        viz, diag, std = self._msgs
        stamp = self._node.get_clock().now().to_msg()
        array = viz.MarkerArray()
        clear = viz.Marker(action=viz.Marker.DELETEALL)
        clear.header.frame_id, clear.header.stamp = self.topics.frame, stamp
        array.markers = [clear] + [self._marker(m, stamp) for m in markers]
        self._pub["markers"].publish(array)
        report = diag.DiagnosticArray()
        report.header.frame_id, report.header.stamp = self.topics.frame, stamp
        report.status = [
            diag.DiagnosticStatus(
                level=bytes([s["level"]]),
                name=s["name"],
                message=s["message"],
                hardware_id=s["hardware_id"],
                values=[diag.KeyValue(key=k, value=v) for k, v in s["values"]],
            )
            for s in statuses
        ]
        self._pub["diagnostics"].publish(report)
        self._pub["mission"].publish(std.String(data=mission))

    def _marker(self, m: dict[str, Any], stamp: Any) -> Any:
        viz = self._msgs[0]
        marker = viz.Marker(ns=m["ns"], id=m["id"], type=getattr(viz.Marker, m["type"]))
        marker.action = viz.Marker.ADD
        marker.header.frame_id, marker.header.stamp = self.topics.frame, stamp
        pose = m["pose"]
        marker.pose.position.x, marker.pose.position.y = pose["x"], pose["y"]
        marker.pose.position.z = pose["z"]
        marker.pose.orientation.z = math.sin(pose["yaw"] / 2)
        marker.pose.orientation.w = math.cos(pose["yaw"] / 2)
        marker.scale.x, marker.scale.y, marker.scale.z = (float(m["scale"][k]) for k in "xyz")
        c = m["color"]
        marker.color.r, marker.color.g, marker.color.b, marker.color.a = (
            float(c[k]) for k in "rgba"
        )
        marker.text = m["text"]
        return marker

    def _answer(self, text: str) -> None:
        self._pub["result"].publish(self._msgs[2].String(data=text))
