"""What a cobot expects of its person (seed 001: Noormohammadi-Asl et al., *To Lead or
to Follow?*), read from the broker alone for the person's page (pure: no I/O).

The paper's person works from a GUI through which the cobot "allocates and instructs
the human agent ... to perform subtask 7" (§IV.B). Here that is read from what the
cobot publishes:

- ``kitting.robot_action`` R2 ending puts a block on the person's tray: the subtask is
  **assigned to them** (state ASSIGNED_TO_HUMAN of Fig. 6) until they place it (H4),
  or the cobot takes it back (R1 with ``cancels: R5``);
- ``kitting.plan``: the allocation of the latest plan (``assignment``: task -> human or
  robot): the subtasks the cobot **plans for them** next, and its beliefs α_f (following
  preference: near 0 leading, near 1 following) and α_e (error-proneness);
- ``kitting.human_action``: what the person did, counted as *followed* (H4: did what was
  assigned) or *led* (H1: chose a subtask themselves; H2: gave one to the robot), as
  the paper classes them (§IV.B, "Leading actions ... Following actions").

Choice (the paper gives no threshold): the page says the cobot treats the person as a
follower when α_f ≥ 0.5 and as a leader below, and shows the number as well.
"""

from __future__ import annotations

from collections import deque
from typing import Any

__all__ = ["KittingExpectations", "spot_label"]

#: subtasks per workspace in seed 001's kitting scenario (W1..W4, spots 1-5)
SPOTS = 5
#: the person's recent actions kept for the page
RECENT = 6
FOLLOWING = {"H4"}
LEADING = {"H1", "H2", "H6"}


def spot_label(task: int, spots: int = SPOTS) -> str:
    """``W2·3`` for task 7: workspace and spot, as the paper numbers them (from 1)."""
    return f"W{task // spots + 1}·{task % spots + 1}"


class _Team:
    """One cobot and its person."""

    def __init__(self, cobot: str, person: str):
        self.cobot, self.person = cobot, person
        self.n = 20
        self.tray: dict[int, str | None] = {}  # task -> colour, on the person's tray
        self.placed: set[int] = set()
        self.plan: dict[str, Any] | None = None
        self.recent: deque[dict[str, Any]] = deque(maxlen=RECENT)
        self.followed = self.led = 0
        self.doing: dict[str, Any] | None = None
        self.robot_doing: dict[str, Any] | None = None
        self.started = self.done = False
        self.summary: dict[str, Any] | None = None


class KittingExpectations:
    """Feed every message of the team (``feed``); ``for_person(id)`` is what the cobot
    expects of that person, or None when no cobot works with them."""

    def __init__(self) -> None:
        self.teams: dict[str, _Team] = {}  # person -> their cobot's picture
        self.version = 0

    def _team(self, cobot: str, person: Any) -> _Team | None:
        if not isinstance(person, str) or not person:
            return None
        team = self.teams.get(person)
        if team is None or team.cobot != cobot:
            team = self.teams[person] = _Team(cobot, person)
        return team

    def _of_cobot(self, cobot: str) -> _Team | None:
        return next((t for t in self.teams.values() if t.cobot == cobot), None)

    def feed(self, kind: str, sender: str, body: Any, ts: int) -> bool:
        """One message; True when it changed an expectation. Never raises."""
        if not kind.startswith("kitting.") and kind != "factsheet":
            return False
        body = body if isinstance(body, dict) else {}
        if kind == "factsheet":
            if body.get("kind") == "cobot":
                return self._team(sender, body.get("human")) is not None
            return False
        if kind == "kitting.start":
            team = self._team(sender, body.get("human"))
            if team is None:
                return False
            fresh = self.teams[team.person] = _Team(sender, team.person)
            fresh.started = True
            if isinstance(body.get("n"), int) and 0 < body["n"] <= 1000:
                fresh.n = body["n"]
        elif kind == "kitting.human_action":
            team = self.teams.get(sender)
            if team is None:
                return False
            self._human(team, body, ts)
        else:
            team = self._of_cobot(sender)
            if team is None:
                return False
            if kind == "kitting.robot_action":
                self._robot(team, body)
            elif kind == "kitting.plan":
                self._plan(team, body, ts)
            elif kind == "kitting.done":
                team.done, team.tray = True, {}
                team.summary = {k: body.get(k) for k in ("makespan", "pattern_correct", "pattern")}
            else:
                return False
        self.version += 1
        return True

    @staticmethod
    def _task(team: _Team, body: dict[str, Any]) -> int | None:
        task = body.get("task")
        if isinstance(task, bool) or not isinstance(task, int) or not 0 <= task < team.n:
            return None
        return task

    def _robot(self, team: _Team, body: dict[str, Any]) -> None:
        task, action, phase = self._task(team, body), body.get("action"), body.get("phase")
        if task is None:
            return
        colour = body.get("colour") if isinstance(body.get("colour"), str) else None
        if phase == "start":
            team.robot_doing = {"task": task, "spot": spot_label(task), "action": action}
            if body.get("cancels") == "R5":  # takes back what it had assigned to the person
                team.tray.pop(task, None)
            return
        team.robot_doing = None
        if phase != "end":
            return
        if action == "R2":
            team.tray[task] = colour
        elif action in ("R1", "R4"):
            team.tray.pop(task, None)
            team.placed.add(task)
        elif action == "R3":
            team.placed.discard(task)

    def _human(self, team: _Team, body: dict[str, Any], ts: int) -> None:
        task, action, phase = self._task(team, body), body.get("action"), body.get("phase")
        if task is None or not isinstance(action, str):
            return
        if phase == "start":
            team.doing = {"task": task, "spot": spot_label(task), "action": action}
            return
        if phase != "end":
            return
        team.doing = None
        role = "followed" if action in FOLLOWING else "led" if action in LEADING else "other"
        team.followed += role == "followed"
        team.led += role == "led"
        team.recent.append({"ts": ts, "task": task, "spot": spot_label(task), "action": action,
                            "role": role})  # fmt: skip
        team.tray.pop(task, None)
        if action in ("H1", "H4"):
            team.placed.add(task)

    def _plan(self, team: _Team, body: dict[str, Any], ts: int) -> None:
        assignment = body.get("assignment") if isinstance(body.get("assignment"), dict) else {}
        mine, robot = [], []
        for tid, agent in assignment.items():
            if not (isinstance(tid, str) and tid[1:].isdigit()):
                continue
            task = int(tid[1:])
            if not 0 <= task < team.n:
                continue
            (mine if agent == "human" else robot).append(task)
        team.plan = {
            "ts": ts,
            "alpha_f": _prob(body.get("alpha_f")),
            "alpha_e": _prob(body.get("alpha_e")),
            "human": sorted(mine),
            "robot": sorted(robot),
        }

    def for_person(self, person: str) -> dict[str, Any] | None:
        """The page's panel for `person`: cobot, tray (assigned now), planned for them,
        lead/follow belief and what they did; None when no cobot works with them."""
        team = self.teams.get(person)
        if team is None:
            return None
        plan = team.plan or {}
        alpha_f = plan.get("alpha_f")
        stance = None
        if alpha_f is not None:
            stance = "follow" if alpha_f >= 0.5 else "lead"
        planned = [t for t in plan.get("human", []) if t not in team.placed and t not in team.tray]
        return {
            "cobot": team.cobot,
            "started": team.started,
            "done": team.done,
            "assigned": [
                {"task": t, "spot": spot_label(t), "colour": c}
                for t, c in sorted(team.tray.items())
            ],
            "planned": [{"task": t, "spot": spot_label(t)} for t in planned],
            "robot_planned": len([t for t in plan.get("robot", []) if t not in team.placed]),
            "alpha_f": alpha_f,
            "alpha_e": plan.get("alpha_e"),
            "stance": stance,
            "followed": team.followed,
            "led": team.led,
            "recent": list(team.recent),
            "doing": team.doing,
            "robot_doing": team.robot_doing,
            "placed": len(team.placed),
            "n": team.n,
            "summary": team.summary,
        }


def _prob(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return round(min(1.0, max(0.0, float(value))), 3)
