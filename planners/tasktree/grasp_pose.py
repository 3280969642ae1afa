"""How the object's pose relative to an arm changes one grasp's quality (seed 000 §2.4.2).

GPD rates grasps on the part of the object the robot sees, and the paper's reach and
orientation filters then keep or zero the best; so the same object scores differently
in each scenario (Nicolescu et al., Tables 1 and 2). Without a point cloud, teamtree
rates that dependence from the pose itself, in three factors, each in [0, 1]:

- ``reach_factor``: the wrist of the grasp (``hand_length`` behind the palm) must lie
  within the arm's own reach from its shoulder; the factor falls smoothly (logistic)
  from 1 near the shoulder to ~0 at full stretch, as manipulability does. It uses the
  arm's reach from where the base stands now, not the base's travel: the score is what
  the robot perceives from here (driving is a separate check, the reachability filter).
- ``bearing_factor``: an arm approaches an object from its own side. The horizontal part
  of the approach is compared with the bearing from the shoulder to the grasp; an
  approach turned away by θ keeps ``max(0, cos θ)``, weighted by how horizontal the
  approach is (a top-down approach barely depends on it). Boxes therefore score by
  their yaw relative to the arm; cylinders and spheres do not.
- ``coverage_factor``: how much of the object's extent along the approach lies between
  the fingers, ``(finger_depth / extent)^power``. GPD's classifier sees the points inside the
  hand's closing region; a grasp that holds only the rim of a tall pot (top-down) or the
  near edge of a wide box leaves most of the object outside, and it can swing about
  the fingers. This is where a sideways and a top-down hand differ most on one object.

Readings chosen where the paper is silent (it only names GPD and the two filters): the
factors and their constants are teamtree's, calibrated so that the better robot per
object and scenario and the zeros agree with Tables 1 and 2 (docs/tea_party.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from teamtree.broker.lazy import lazy_module
from teamtree.hardware.geometry import ArmModel, row_dots

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")  # loaded on first use, after the agent is ONLINE

__all__ = [
    "bearing_factor",
    "bearing_factors",
    "coverage_factor",
    "reach_factor",
    "reach_factors",
]


def reach_factor(
    position: np.ndarray,
    approach: np.ndarray,
    depth: float,
    arm: ArmModel,
    knee: float = 0.8,
    softness: float = 0.07,
) -> float:
    """Logistic in the wrist's distance from the shoulder over ``arm.reach``: 0.5 at
    ``knee``, steepness ``softness`` (both fractions of the reach). One grasp."""
    rows = _rows(position), _rows(approach), np.array([float(depth)])
    return float(reach_factors(*rows, arm, knee, softness)[0])


def reach_factors(
    positions: np.ndarray,
    approaches: np.ndarray,
    depths: np.ndarray,
    arm: ArmModel,
    knee: float = 0.8,
    softness: float = 0.07,
) -> np.ndarray:
    """``reach_factor`` of many grasps at once (rows of `positions` and `approaches`)."""
    wrist = positions - approaches * (depths + arm.hand_length)[:, None]
    d = wrist - np.asarray(arm.base_position, dtype=float)
    r = np.sqrt(row_dots(d, d)) / arm.reach
    return 1.0 / (1.0 + np.exp((r - knee) / softness))


def bearing_factor(position: np.ndarray, approach: np.ndarray, arm: ArmModel) -> float:
    """``1 − h·(1 − max(0, cos θ))``: h the approach's horizontal length (1 sideways,
    ~0 top-down), θ the angle between its horizontal part and the shoulder's bearing.
    One grasp."""
    return float(bearing_factors(_rows(position), _rows(approach), arm)[0])


def bearing_factors(positions: np.ndarray, approaches: np.ndarray, arm: ArmModel) -> np.ndarray:
    """``bearing_factor`` of many grasps at once (rows)."""
    h = np.hypot(approaches[:, 0], approaches[:, 1])
    bx = positions[:, 0] - arm.base_position[0]
    by = positions[:, 1] - arm.base_position[1]
    b = np.hypot(bx, by)
    level = (h < 1e-9) | (b < 1e-9)  # straight down, or right above the shoulder
    cos = (approaches[:, 0] * bx + approaches[:, 1] * by) / np.where(level, 1.0, h * b)
    return np.where(level, 1.0, 1.0 - h * (1.0 - np.maximum(0.0, cos)))


def coverage_factor(finger_depth: float, extent: Any, power: float = 3.0) -> Any:
    """``(finger_depth / extent)^power``, capped at 1: how much of the object's extent
    along the approach the fingers can hold between them (`extent` a float or an array
    of them)."""
    return np.minimum(1.0, finger_depth / extent) ** power


def _rows(vector: Any) -> np.ndarray:
    return np.asarray(vector, dtype=float).reshape(1, 3)
