"""The lease guard's process (see ``lease_guard``): its own rclpy node that cancels,
through each action's cancel service, a goal whose deadline passed without renewal,
or every goal it holds once its stdin closes (the driver died or stopped).

Run by the driver as ``python -m teamtree.drivers.ros2.guard_process NODE_NAME
[DOMAIN_ID]``; reads the lines ``lease_guard.GuardLink`` writes.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

GUARD_PERIOD_S = 0.05
"""How often the guard checks its deadlines."""
CLOSED_GRACE_S = 5.0
"""After its stdin closed, how long the guard waits for its cancels to be answered."""


class _Guard:
    """The guard's state: goals held, their deadlines, and cancels under way."""

    def __init__(self, node: Any):
        self.node = node
        self.lock = threading.Lock()
        self.held: dict[str, dict[str, Any]] = {}
        self.clients: dict[str, Any] = {}
        self.closed = False

    def client(self, action: str) -> Any:
        from action_msgs.srv import CancelGoal

        if action not in self.clients:
            self.clients[action] = self.node.create_client(
                CancelGoal, f"{action.rstrip('/')}/_action/cancel_goal"
            )
        return self.clients[action]

    def line(self, text: str) -> None:
        try:
            message = json.loads(text)
            op, ref = message["op"], str(message["ref"])
        except (ValueError, KeyError, TypeError):
            return
        with self.lock:
            if op == "hold":
                self.held[ref] = {
                    "action": str(message["action"]),
                    "goal_id": bytes.fromhex(message["goal_id"]),
                    "deadline_ms": message.get("deadline_ms"),
                    "cancelling": False,
                }
            elif op == "renew" and ref in self.held:
                self.held[ref]["deadline_ms"] = message.get("deadline_ms")
            elif op == "ended":
                self.held.pop(ref, None)

    def tick(self) -> None:
        """Cancel each held goal whose deadline passed, or all once stdin closed."""
        now = time.time() * 1000
        with self.lock:
            due = [
                (ref, goal)
                for ref, goal in self.held.items()
                if not goal["cancelling"]
                and (
                    self.closed or (goal["deadline_ms"] is not None and now >= goal["deadline_ms"])
                )
            ]
        for ref, goal in due:
            client = self.client(goal["action"])
            if not client.service_is_ready():
                continue  # tried again next tick
            goal["cancelling"] = True
            self._cancel(client, ref, goal)

    def _cancel(self, client: Any, ref: str, goal: dict[str, Any]) -> None:
        from action_msgs.srv import CancelGoal

        request = CancelGoal.Request()
        request.goal_info.goal_id.uuid = list(goal["goal_id"])

        def answered(future: Any) -> None:
            code = future.result().return_code if future.exception() is None else -1
            print(f"CANCELLED {ref} {code}", flush=True)
            with self.lock:
                self.held.pop(ref, None)

        client.call_async(request).add_done_callback(answered)


def main(argv: list[str]) -> int:
    """Run a guard until its stdin closes and its cancels are answered."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node

    context = rclpy.Context()
    if len(argv) > 1:
        rclpy.init(context=context, domain_id=int(argv[1]))
    else:
        rclpy.init(context=context)
    node = Node(argv[0], context=context)
    guard = _Guard(node)
    node.create_timer(GUARD_PERIOD_S, guard.tick)

    def read_stdin() -> None:
        for text in sys.stdin:
            guard.line(text)
        guard.closed = True

    threading.Thread(target=read_stdin, daemon=True).start()
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    print("READY", flush=True)
    closed_at: float | None = None
    while context.ok():
        executor.spin_once(timeout_sec=GUARD_PERIOD_S)
        if guard.closed:
            closed_at = closed_at or time.monotonic()
            with guard.lock:
                left = bool(guard.held)
            if not left or time.monotonic() - closed_at > CLOSED_GRACE_S:
                break
    node.destroy_node()
    rclpy.shutdown(context=context)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
