"""A ROS 2 robot for the tests: a real rclpy node in its own process, over DDS.

It serves the action ``<ns>/do`` (``test_msgs/action/Fibonacci``: the goal's ``order``
is the id of the object to handle), publishes its odometry (``nav_msgs/Odometry`` on
``<ns>/odom``, moving towards the object it works on), its battery
(``sensor_msgs/BatteryState``) and diagnostics (``diagnostic_msgs/DiagnosticArray``),
and keeps its own record of what it did in a JSON file (rewritten on every change, so
it survives a SIGKILL): ``executions`` (goals it started, per object), ``done``,
``canceled``, ``aborted``, ``rejected``, and ``log``: [time, event, object] rows.

Usage: ``python robot_node.py '<json options>'`` with keys ``ns``, ``domain_id``,
``objects`` {id: [name, [x, y]]}, ``state`` (file), ``reject`` and ``abort`` (names),
``duration_s`` (per goal), ``durations`` {name: s}, ``start`` [x, y]. Prints READY.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import threading
import time

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from nav_msgs.msg import Odometry
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import BatteryState
from test_msgs.action import Fibonacci


def main() -> None:
    opts = json.loads(sys.argv[1])
    ns = opts["ns"]
    objects = {int(k): (v[0], v[1]) for k, v in opts["objects"].items()}
    reject, abort = set(opts.get("reject", [])), set(opts.get("abort", []))
    duration = float(opts.get("duration_s", 0.5))
    durations = opts.get("durations", {})
    record = {"executions": {}, "done": [], "canceled": [], "aborted": [], "rejected": [],
              "log": []}  # fmt: skip
    lock = threading.Lock()
    pose = list(opts.get("start", [0.0, 0.0]))

    def save(event: str | None = None, name: str | None = None) -> None:
        if event is not None:
            record["log"].append([time.time(), event, name])
        tmp = opts["state"] + ".tmp"
        with open(tmp, "w") as f:
            json.dump(record, f)
        os.replace(tmp, opts["state"])

    rclpy.init(domain_id=int(opts["domain_id"]))
    node = Node(f"robot_{ns.strip('/').replace('/', '_')}")
    group = ReentrantCallbackGroup()

    def on_goal(goal: Fibonacci.Goal) -> GoalResponse:
        name = objects.get(goal.order, (str(goal.order),))[0]
        if name in reject or goal.order not in objects:
            with lock:
                record["rejected"].append(name)
                save("rejected", name)
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def execute(handle) -> Fibonacci.Result:
        name, (x, y) = objects[handle.request.order]
        with lock:
            record["executions"][name] = record["executions"].get(name, 0) + 1
            save("executes", name)
        print(f"EXEC {name}", flush=True)
        result = Fibonacci.Result()
        steps = max(1, int(float(durations.get(name, duration)) / 0.05))
        start = list(pose)
        for i in range(steps):
            if handle.is_cancel_requested:
                handle.canceled()
                with lock:
                    record["canceled"].append(name)
                    save("canceled", name)
                print(f"CANCELED {name}", flush=True)
                return result
            f = (i + 1) / steps
            pose[0], pose[1] = start[0] + (x - start[0]) * f, start[1] + (y - start[1]) * f
            feedback = Fibonacci.Feedback()
            feedback.sequence = [i + 1, steps]
            handle.publish_feedback(feedback)
            time.sleep(0.05)
        if name in abort:
            handle.abort()
            result.sequence = [-handle.request.order, 99]
            with lock:
                record["aborted"].append(name)
                save("aborted", name)
            print(f"ABORTED {name}", flush=True)
            return result
        handle.succeed()
        result.sequence = [handle.request.order]
        with lock:
            record["done"].append(name)
            save("done", name)
        print(f"DONE {name}", flush=True)
        return result

    ActionServer(
        node,
        Fibonacci,
        f"{ns}/do",
        execute_callback=execute,
        goal_callback=on_goal,
        cancel_callback=lambda _: CancelResponse.ACCEPT,
        callback_group=group,
    )
    odom_pub = node.create_publisher(Odometry, f"{ns}/odom", 10)
    battery_pub = node.create_publisher(BatteryState, f"{ns}/battery", 10)
    diag_pub = node.create_publisher(DiagnosticArray, "/diagnostics", 10)

    def tick() -> None:
        odom = Odometry()
        odom.header.frame_id = "map"
        odom.header.stamp = node.get_clock().now().to_msg()
        odom.pose.pose.position.x, odom.pose.pose.position.y = float(pose[0]), float(pose[1])
        odom.pose.pose.orientation.z, odom.pose.pose.orientation.w = math.sin(0.25), math.cos(0.25)
        odom_pub.publish(odom)
        battery = BatteryState()
        battery.percentage = 0.8
        battery.present = True
        battery_pub.publish(battery)

    def diagnostics() -> None:
        array = DiagnosticArray()
        status = DiagnosticStatus()
        status.level = DiagnosticStatus.OK
        status.name = f"{ns}/base"
        status.message = "ok"
        array.status = [status]
        diag_pub.publish(array)

    node.create_timer(0.05, tick, callback_group=group)
    node.create_timer(1.0, diagnostics, callback_group=group)
    save()
    executor = MultiThreadedExecutor(num_threads=4)
    executor.add_node(node)
    print("READY", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        executor.spin()


if __name__ == "__main__":
    main()
