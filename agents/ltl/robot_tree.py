"""The LTL robot's behaviour tree (its shape is drawn in ``robot``): the checks it
makes, at which rates, and which strategy or plan action each leads to.

The tree is built once per robot and only reads the robot's state; the conditions
and the branches they guard are one concept (what the robot reacts to, in which
order), kept apart from how the robot takes plans and messages.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import py_trees

from teamtree.agents.ltl.behaviours import CheckAtRate, Recovery, RunCoroutine

if TYPE_CHECKING:
    from teamtree.agents.ltl.robot import LtlRobotAgent

__all__ = ["RATES", "build_tree"]

# condition check rates (Hz); the LTL precondition is checked once per step
RATES = {"upright": 20.0, "operational": 10.0, "on_plan": 10.0, "environment": 5.0}


def build_tree(
    robot: LtlRobotAgent,
) -> tuple[py_trees.behaviour.Behaviour, py_trees.composites.Sequence]:
    """The robot's tree and its ``work`` branch (the plan action, which an
    interruption cuts off)."""
    strategies = robot.strategies

    def act(name: str, start: Callable[[], Awaitable[bool]]) -> RunCoroutine:
        return RunCoroutine(name, start, lambda c, n: robot.spawn(c, n, optional=True))

    def check(name: str, fn: Callable[[], bool], rate: float | None = None) -> CheckAtRate:
        return CheckAtRate(name, fn, rate)

    def has_plan() -> bool:
        return robot.plan is not None and robot.hold_epoch is None

    def on_planned_state() -> bool:
        return robot.plan is None or robot.current == robot.plan.states[robot.step]

    def waits_done() -> bool:
        epoch = robot.version[0]
        assert robot.plan is not None
        return all(robot.peer_done.get(r, (-1, -1))[0] >= epoch for r in robot.plan.waits_for)

    work = py_trees.composites.Sequence(
        "work",
        memory=True,
        children=[
            check("not held", lambda: robot.hold_epoch is None),
            check("teammates done", waits_done),
            act("execute next action", robot.execute_step),
        ],
    )
    reactive: list[py_trees.behaviour.Behaviour] = []
    if robot.spec.legged:
        reactive.append(
            Recovery(
                "locomotion",
                [
                    check("upright", lambda: not robot.fallen, RATES["upright"]),
                    act("R1 recovery stand", strategies.recover),
                ],
            )
        )
    reactive += [
        Recovery(
            "critical failure",
            [
                check(
                    "operational",
                    lambda: not robot.failed or robot.failure_acked,
                    RATES["operational"],
                ),
                act("R2 global reallocation", lambda: strategies.request("R2")),
            ],
        ),
        Recovery(
            "state change",
            [
                check("on planned state", on_planned_state, RATES["on_plan"]),
                act("R3 local reallocation", lambda: strategies.request("R3")),
            ],
        ),
        Recovery(
            "environment change",
            [
                check("environment known", lambda: not robot.unreported, RATES["environment"]),
                act("R4 local reallocation", lambda: strategies.request("R4")),
            ],
        ),
        work,
    ]
    root = py_trees.composites.Sequence(
        "mission",
        memory=True,
        children=[
            check("has plan", has_plan),
            py_trees.composites.Sequence("reactive", memory=False, children=reactive),
        ],
    )
    return root, work
