"""Why a stuck team is stuck, as the robot's ``mission.failed`` says it: the open leaves
and what this robot's attempts met since the team last progressed (the check itself,
on a robot in-process: tests/test_body_watch.py)."""

from __future__ import annotations

from teamtree.agents.tasktree.stall_check import stall_reason


def test_failed_attempts_are_counted_by_reason_most_first() -> None:
    attempts = [
        {"node": "a", "ok": False, "reason": "unreachable"},
        {"node": "a", "ok": True},
        {"node": "b", "ok": False, "reason": "lease_expired"},
        {"node": "a", "ok": False, "reason": "unreachable"},
    ]
    why = stall_reason(["cup (potential here 0.5)"], attempts)
    assert why == (
        "cup (potential here 0.5): this robot's behaviours since failed 3 times "
        "(unreachable x2, lease_expired x1) and no teammate finished one"
    )


def test_no_attempt_says_this_robot_cannot_take_the_open_leaves() -> None:
    why = stall_reason(["cup (potential here 0)", "tea (potential here 0)"], [{"ok": True}])
    assert why.startswith("cup (potential here 0), tea (potential here 0): open and worked on")
    assert "potential 0: out of reach or no grasp" in why
    assert stall_reason([], []).startswith("none: ")
