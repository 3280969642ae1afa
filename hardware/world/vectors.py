"""Three-vector helpers the world's bodies, hands and views share."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from teamtree.broker import SpecificationError
from teamtree.hardware.profiles import Vec3


def vec3(value: Any, what: str) -> Vec3:
    """`value` as three finite floats. Raises SpecificationError naming `what`."""
    try:
        x, y, z = (float(v) for v in value)
    except (TypeError, ValueError):
        raise SpecificationError(f"{what} {value!r} is not three numbers") from None
    if not all(math.isfinite(v) for v in (x, y, z)):
        raise SpecificationError(f"{what} {value!r} is not finite")
    return (x, y, z)


def dist(a: Sequence[float], b: Sequence[float]) -> float:
    """Euclidean distance."""
    return math.dist(a, b)


def add(a: Sequence[float], b: Sequence[float]) -> Vec3:
    """`a` + `b`."""
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def lerp(a: Vec3, b: Vec3, f: float) -> Vec3:
    """The point a share `f` of the way from `a` to `b`."""
    return (a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f, a[2] + (b[2] - a[2]) * f)


def rounded(v: Sequence[float]) -> list[float]:
    """`v` as a list rounded to 0.1 mm, as views and events show positions."""
    return [round(float(x), 4) for x in v]
