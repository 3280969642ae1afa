"""How long a team takes to do a pick-and-place job in its working mode (seed 002
§VII.C, Fig. 16): a floor with a table and a drop place, straight-line travel, and
box trips shared by the workers. Pure: simulated seconds, no clock, no I/O.

The paper gives no timings, speeds or floor size; every figure here is a choice,
held in :class:`FloorModel` so a study can vary it:

- the floor is 20 m x 20 m with the table at (5, 10) and the place at (15, 10); a
  job moves ``boxes`` boxes (4) from the table to the place. ``jobs.py``'s job layer
  has one or two boxes; the study moves more so that a partnership has work to share
  (Fig. 15 (10): the trips repeat "until all boxes are linked to the place").
- speed is the strength level of the robot's locomotion times 0.25 m/s (Table II:
  B, L, M lv 2, 0.5 m/s; S1, S2, O4 lv 1, 0.25 m/s). An assembled team moves on its
  ground robot's locomotion (§VI.A), at that robot's speed.
- grasping and releasing a box take 3 s each; docking one robot onto the tower takes
  10 s ("assembly takes time, such as approaching the agent and performing assembly").
- deciding costs 0.17 s in every mode that asks for favors, the paper's measured
  Phase 1 time of method 1 (§VIII.A); solo costs nothing ("no extra computation
  involved in collaboration decision-making").
- who moves when: solo, the agent goes to the table; partnership, both go to the
  table once selected and the robot at the table first takes the next box;
  subcontract, the helper goes to the table; assembly, the ground robot drives to
  each robot above it in tower order (robots without locomotion cannot come to it),
  docks each, then the tower goes to the table.
- the job ends when its last box is placed; efficiency is boxes placed per minute
  from the job's assignment.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from teamtree.hardware import Domain, RobotProfile
from teamtree.planners.capability.modes import Selection, WorkingMode

Point = tuple[float, float]


@dataclass(frozen=True)
class FloorModel:
    """The floor and the timings of the study (see the module docstring for why)."""

    width_m: float = 20.0
    depth_m: float = 20.0
    table: Point = (5.0, 10.0)
    place: Point = (15.0, 10.0)
    boxes: int = 4
    comm_range_m: float = 10.0
    speed_per_level: float = 0.25
    pick_s: float = 3.0
    release_s: float = 3.0
    dock_s: float = 10.0
    decision_s: float = 0.17

    def __post_init__(self) -> None:
        if self.boxes < 1:
            raise ValueError("a job moves at least one box")
        if min(self.width_m, self.depth_m, self.speed_per_level) <= 0:
            raise ValueError("floor size and speed must be positive")
        if self.comm_range_m <= 0:
            raise ValueError("the communication range must be positive")

    def speed(self, robot: RobotProfile) -> float:
        """m/s on the robot's strongest locomotion unit; 0 without one."""
        levels = [c.level for c in robot.components if c.domain == Domain.LOCOMOTION]
        return self.speed_per_level * max(levels, default=0)


@dataclass(frozen=True)
class JobTime:
    """Where a job's time went, in simulated seconds from its assignment."""

    decision_s: float
    gather_s: float
    """Assembly only: driving to the other members and docking them."""
    to_table_s: float
    boxes_s: float
    """From the first worker's arrival at the table to the last box placed."""
    total_s: float
    boxes: int

    @property
    def efficiency(self) -> float:
        """Boxes placed per minute from the assignment."""
        return 60.0 * self.boxes / self.total_s


def _travel(a: Point, b: Point, speed: float) -> float:
    return math.dist(a, b) / speed


def _box_trips(model: FloorModel, workers: list[tuple[float, float]]) -> float:
    """The time the last box is placed; ``workers`` are (arrival at the table, speed).
    The worker at the table first takes the next box; ties go to the earlier listed."""
    ready = [at for at, _ in workers]
    done = 0.0
    for _ in range(model.boxes):
        k = min(range(len(workers)), key=lambda i: (ready[i], i))
        leg = _travel(model.table, model.place, workers[k][1])
        placed = ready[k] + model.pick_s + leg + model.release_s
        done = max(done, placed)
        ready[k] = placed + leg
    return done


def job_time(
    selection: Selection,
    robots: Mapping[str, RobotProfile],
    positions: Mapping[str, Point],
    model: FloorModel,
) -> JobTime:
    """The time ``selection``'s team takes to move ``model.boxes`` boxes, its members
    starting at ``positions``. Raises ValueError when a robot that must move cannot."""
    decision = 0.0 if selection.mode == WorkingMode.SOLO else model.decision_s
    gather = 0.0
    if selection.mode == WorkingMode.ASSEMBLY:
        if selection.team is None:
            raise ValueError("an assembly selection without a team")
        ground = selection.team.ground
        speed = model.speed(ground)
        if speed <= 0:
            raise ValueError(f"{ground.robot_id} carries the tower but cannot move")
        at = positions[ground.robot_id]
        for member in selection.team.members[1:]:
            gather += _travel(at, positions[member.robot_id], speed) + model.dock_s
            at = positions[member.robot_id]
        movers = [(ground.robot_id, at, speed)]
    else:
        movers = []
        for rid in selection.members:
            speed = model.speed(robots[rid])
            if speed <= 0:
                raise ValueError(f"{rid} works {selection.mode.value} but cannot move")
            movers.append((rid, positions[rid], speed))
    start = decision + gather
    arrivals = [(start + _travel(p, model.table, v), v) for _, p, v in movers]
    first = min(at for at, _ in arrivals)
    end = _box_trips(model, arrivals)
    return JobTime(
        decision_s=decision,
        gather_s=gather,
        to_table_s=first - start,
        boxes_s=end - first,
        total_s=end,
        boxes=model.boxes,
    )
