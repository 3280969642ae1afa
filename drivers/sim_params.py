"""The ``sim_driver`` kind's ``[[agents]]`` keys as a declared type."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta, Struct

from teamtree.agents.runtime.params import ID


def _positive(what: str) -> Meta:
    return Meta(gt=0, description=what)


class SimDriverParams(Struct, frozen=True, forbid_unknown_fields=True):
    """Keys of the driver of one simulated robot; ``agent`` defaults to ``robot``."""

    robot: Annotated[str, Meta(description="an id string", extra=ID)]
    agent: Annotated[str, Meta(description="an id string", extra=ID)]
    world: Annotated[str | None, Meta(description="the world agent's id")] = None
    profile: Annotated[str | None, Meta(description="a robot profile name such as 'pr2'")] = None
    poll_hz: Annotated[float, _positive("a positive rate (Hz)")] = 20.0
    idle_poll_hz: Annotated[float, _positive("a positive rate (Hz)")] = 10.0
    observation_hz: Annotated[float, _positive("a positive rate (Hz)")] = 10.0
    keyframe_s: Annotated[float, _positive("a positive number of s")] = 1.0
    zmq_timeout_s: Annotated[float, _positive("a positive number of s")] = 1.0
    command_wait_s: Annotated[float, _positive("a positive number of s")] = 10.0
    cancel_on_agent_loss: Annotated[bool, Meta(description="true or false")] = True
