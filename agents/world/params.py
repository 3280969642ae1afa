"""The ``world`` kind's ``[[agents]]`` keys as a declared type.

The ``objects``, ``robots`` and ``hands`` tables are checked entry by entry by the
world agent (each entry's keys depend on its shape), so they are typed as tables here.
"""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta, Struct

from teamtree.hardware.world import GOAL_TOLERANCE, HAND_SAMPLE_S


class WorldParams(Struct, frozen=True, forbid_unknown_fields=True):
    """Keys of the simulated world service."""

    time_factor: Annotated[
        float, Meta(gt=0, description="a positive number (sim s per wall s)")
    ] = 1.0
    zmq_host: Annotated[str, Meta(description="an IP address to bind")] = "127.0.0.1"
    zmq_port: Annotated[int, Meta(ge=0, le=65535, description="a TCP port 0-65535 (0 = free)")] = 0
    zmq_advertise: Annotated[str | None, Meta(description="a host name drivers connect to")] = None
    state_period_s: Annotated[float, Meta(gt=0, description="a positive number of seconds")] = 0.2
    goal_tolerance: Annotated[float, Meta(gt=0, description="a positive distance (m)")] = (
        GOAL_TOLERANCE
    )
    objects: Annotated[dict[str, Any] | None, Meta(description="a table of objects")] = None
    robots: Annotated[dict[str, Any] | None, Meta(description="a table of robots")] = None
    hands: Annotated[dict[str, Any], Meta(description="a table of human hands")] = {}
    seed: Annotated[int, Meta(description="a whole number")] = 0
    hand_sample_s: Annotated[float, Meta(gt=0, description="a positive number of s")] = (
        HAND_SAMPLE_S
    )
