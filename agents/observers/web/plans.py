"""What planners told the team to do, as the team page shows it (pure: no I/O): each
robot's LTL plan (seed 003) with the steps it has done, and the allocation schedule
(seed 001), the latest and the first.

Both come from planners' replies and change only with them and the steps that follow
them, not with the task tree's transitions, so they live together. An LTL plan also
gives the timeline a row per plan and step, in the mission's ``MissionHistory``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from teamtree.agents.observers.web.history import MissionHistory
from teamtree.broker.envelope import Envelope

__all__ = ["TeamPlans"]


class TeamPlans:
    """``ltl``: robot -> its LTL plan and progress; ``schedule``: the latest allocation
    schedule; ``first_schedule``: the first (the whole plan, before the re-plans shrink
    it). LTL steps open and close rows of `history`, under the mission `mission_key`
    gives a body's work."""

    def __init__(
        self, history: MissionHistory, mission_key: Callable[[dict[str, Any]], str]
    ) -> None:
        self.history = history
        self.mission_key = mission_key
        self.ltl: dict[str, dict[str, Any]] = {}  # robot -> its LTL plan and progress
        self.schedule: dict[str, Any] | None = None  # the latest allocation schedule
        self.first_schedule: dict[str, Any] | None = None

    def ltl_plan(self, robot: str, body: dict[str, Any], ts: int) -> bool:
        """A robot's LTL plan: its actions, to mark off as steps arrive; on the timeline,
        its first action from now on (the last plan's work is over). True when that
        opened a row."""
        plan = body["plan"]
        actions = plan.get("actions") if isinstance(plan.get("actions"), list) else []
        robot = str(plan.get("robot") or robot)
        mission = self.mission_key(body)
        self.history.close_all(mission, robot, ts, "inactive")
        if actions:  # a row per plan and step: a re-plan's actions get their own rows
            node = f"ltl/{body.get('epoch')}.{body.get('seq')}/0"
            self.history.open(mission, robot, node, str(actions[0])[:60], ts)
        self.ltl[robot] = {
            "epoch": body.get("epoch"),
            "seq": body.get("seq"),
            "strategy": body.get("strategy"),
            "cost": plan.get("cost"),
            "actions": [str(a) for a in actions][:200],
            "steps": 0,
            "done": False,
        }
        return bool(actions)

    def ltl_progress(self, robot: str, kind: str, body: dict[str, Any], ts: int) -> None:
        """An ``ltl.step`` or ``ltl.done`` of the robot's current plan (others are stale)."""
        plan = self.ltl.get(robot)
        if plan is None or (body.get("epoch"), body.get("seq")) != (plan["epoch"], plan["seq"]):
            return
        mission = self.mission_key(body)
        if kind == "ltl.done":
            plan["done"], plan["steps"] = True, len(plan["actions"])
            self.history.close_all(mission, robot, ts, "done")
            return
        plan["steps"] = min(len(plan["actions"]), plan["steps"] + 1)
        self.history.close_all(mission, robot, ts, "done")
        if plan["steps"] < len(plan["actions"]):
            step = plan["steps"]
            node = f"ltl/{plan['epoch']}.{plan['seq']}/{step}"
            self.history.open(mission, robot, node, plan["actions"][step][:60], ts)

    def allocation(self, env: Envelope, body: dict[str, Any]) -> None:
        """An allocation reply's schedule: who does which task when."""
        sched = body["schedule"]
        start, finish = sched.get("start"), sched.get("finish")
        sequence = sched.get("sequence")
        if not (
            isinstance(start, dict) and isinstance(finish, dict) and isinstance(sequence, dict)
        ):
            return
        rows = {}
        for agent, tasks in sequence.items():
            if isinstance(tasks, list):
                rows[str(agent)] = [
                    {"task": str(t), "start": start.get(t), "finish": finish.get(t)}
                    for t in tasks[:200]
                    if isinstance(start.get(t), int | float)
                    and isinstance(finish.get(t), int | float)
                ]
        self.schedule = {
            "from": env.sender,
            "ts": env.ts,
            "makespan": sched.get("makespan"),
            "rows": rows,
        }
        if self.first_schedule is None:  # the whole plan, before the re-plans shrink it
            self.first_schedule = self.schedule
