"""A plain rclpy client of the ROS 2 bridge, in its own process, as any ROS 2 tool would
be: it subscribes to the bridge's markers, diagnostics, mission and submit_result
topics and prints one JSON line per message received (``{"topic": ..., ...}``); each
line it reads on stdin is published as is (a std_msgs/String) on the submit topic once
the bridge subscribes to it. Prints ``READY`` once its subscriptions exist.

Usage: python bridge_client.py '{"ns": "/teamtree"}' (ROS_DOMAIN_ID from the environment)
"""

from __future__ import annotations

import contextlib
import json
import queue
import sys
import threading

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String
from visualization_msgs.msg import Marker, MarkerArray

TYPES = {getattr(Marker, n): n for n in ("ARROW", "CUBE", "SPHERE", "CYLINDER", "TEXT_VIEW_FACING")}
ACTIONS = {Marker.ADD: "ADD", Marker.DELETE: "DELETE", Marker.DELETEALL: "DELETEALL"}


def say(event: dict) -> None:
    print(json.dumps(event), flush=True)


def main() -> None:
    opts = json.loads(sys.argv[1])
    ns = opts.get("ns", "/teamtree").rstrip("/")
    rclpy.init()
    node = Node("bridge_test_client")
    local = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.TRANSIENT_LOCAL)  # fmt: skip

    def on_markers(msg: MarkerArray) -> None:
        say({"topic": "markers", "markers": [
            {"frame": m.header.frame_id, "ns": m.ns, "id": m.id, "action": ACTIONS.get(m.action),
             "type": TYPES.get(m.type), "text": m.text,
             "xyz": [m.pose.position.x, m.pose.position.y, m.pose.position.z],
             "rgba": [m.color.r, m.color.g, m.color.b, m.color.a]}
            for m in msg.markers
        ]})  # fmt: skip

    def on_diagnostics(msg: DiagnosticArray) -> None:
        say({"topic": "diagnostics", "frame": msg.header.frame_id, "statuses": [
            {"name": s.name, "level": s.level[0] if isinstance(s.level, bytes) else s.level,
             "message": s.message, "hardware_id": s.hardware_id,
             "values": {kv.key: kv.value for kv in s.values}}
            for s in msg.status
        ]})  # fmt: skip

    node.create_subscription(MarkerArray, f"{ns}/markers", on_markers, local)
    node.create_subscription(DiagnosticArray, f"{ns}/diagnostics", on_diagnostics, 10)
    node.create_subscription(String, f"{ns}/mission",
                             lambda m: say({"topic": "mission", "data": json.loads(m.data)}), local)  # fmt: skip
    node.create_subscription(String, f"{ns}/submit_result",
                             lambda m: say({"topic": "result", "data": json.loads(m.data)}), local)  # fmt: skip
    submit = node.create_publisher(
        String, f"{ns}/submit", QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    )
    lines: queue.Queue[str] = queue.Queue()

    def read_stdin() -> None:
        for line in sys.stdin:
            lines.put(line.rstrip("\n"))

    threading.Thread(target=read_stdin, daemon=True).start()

    def send() -> None:
        while submit.get_subscription_count() > 0 and not lines.empty():
            submit.publish(String(data=lines.get()))

    node.create_timer(0.1, send)
    say({"topic": "ready"})
    print("READY", flush=True)
    with contextlib.suppress(KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        rclpy.spin(node)


if __name__ == "__main__":
    main()
