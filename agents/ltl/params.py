"""The ``ltl_robot`` and ``ltl_planner`` kinds' ``[[agents]]`` keys as declared types."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta, Struct


class LtlRobotParams(Struct, frozen=True, forbid_unknown_fields=True):
    """Keys of an LTL robot; ``type`` and ``start`` are read with the mission (ltl_mission)."""

    type: Annotated[str | None, Meta(description="a robot type")] = None
    start: Annotated[list[Any] | None, Meta(description="[region, mode]")] = None
    bt_hz: Annotated[float, Meta(gt=0, description="a positive tick rate (Hz)")] = 50.0
    recovery_s: Annotated[
        float, Meta(gt=0, description="simulated seconds of a recovery stand")
    ] = 5.0
    replan_timeout_s: Annotated[float, Meta(gt=0, description="a positive number of seconds")] = (
        10.0
    )


class LtlPlannerParams(Struct, frozen=True, forbid_unknown_fields=True):
    """Keys of the LTL team planner service."""

    sync_timeout_s: Annotated[float, Meta(gt=0, description="a positive number of seconds")] = 3.0
