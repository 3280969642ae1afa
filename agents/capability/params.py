"""The ``factory_robot`` and ``job_source`` kinds' ``[[agents]]`` keys as declared types.

A factory robot's favor settings may also be set once in ``[mission]`` for the whole
team (TEAM_DEFAULTS in agents/capability/factory.py); the kind passes those in as the
defaults of this Struct.
"""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, Struct, field


def _seconds(what: str) -> Meta:
    return Meta(gt=0, description=what)


class FactoryRobotParams(Struct, frozen=True, forbid_unknown_fields=True):
    """Keys of a modular factory robot (Fig. 1 capability model)."""

    robot_type: Annotated[str, Meta(description="a robot type")] = field(name="type")
    position: Annotated[tuple[float, float], Meta(description="[x, y] (two numbers)")] = (0.0, 0.0)
    battery: Annotated[float, Meta(ge=0, le=1, description="a charge in [0, 1]")] = 1.0
    method: Annotated[Literal[1, 2], Meta(description="1 (passive, §IV) or 2 (active, §V)")] = 1
    comm_range: Annotated[
        float, Meta(gt=0, description="a positive communication range (position units)")
    ] = 1e9
    ttl: Annotated[int, Meta(ge=1, description="a hop limit >= 1")] = 2
    window_s: Annotated[
        float, _seconds("seconds to collect grants at most (the request's deadline)")
    ] = 1.0
    close_early: Annotated[
        Literal[0, 1, 2, 3],
        Meta(
            description="0, 1, 2 or 3 (1: close the window once every capable robot "
            "answered; 2: also once the best team they can give has granted; 3: also ask "
            "that team first, the others only if it falls through)"
        ),
    ] = 3
    retry_s: Annotated[
        float, _seconds("seconds before asking again when every robot answered and none fit")
    ] = 0.3
    hold_s: Annotated[float, _seconds("seconds a granting helper waits for the acceptance")] = 0.2
    status_s: Annotated[float, _seconds("seconds between a helper's favor.status heartbeats")] = 0.2
    silence_s: Annotated[float, _seconds("seconds of helper silence before its lease expires")] = (
        1.0
    )
    max_rounds: Annotated[
        int, Meta(ge=1, description="fruitless request rounds before a job fails (>= 1)")
    ] = 5
    drain_per_s: Annotated[
        float, Meta(ge=0, description="battery fraction drained per second (>= 0)")
    ] = 0.0
    favor_loss: Annotated[
        float, Meta(ge=0, lt=1, description="a fraction in [0, 1) of inbound favor messages")
    ] = 0.0
    loss_seed: Annotated[int | None, Meta(description="an integer seed")] = None


class JobEntry(Struct, frozen=True, forbid_unknown_fields=True):
    """One ``jobs = [{job, robot, work_s}]`` entry of a job source."""

    job: Annotated[str, Meta(description="a job name")]
    robot: str | None = None
    work_s: Annotated[float, Meta(gt=0, description="positive seconds")] | None = None


class JobSourceParams(Struct, frozen=True, forbid_unknown_fields=True):
    """Keys of the job source that hands jobs to factory robots."""

    work_s: Annotated[float, Meta(gt=0, description="seconds of work per job (solo)")] = 1.0
    seed: Annotated[int | None, Meta(description="an integer seed")] = None
    jobs: Annotated[list[JobEntry], Meta(description="a list of {job, robot, work_s} tables")] = []
    random_jobs: Annotated[int, Meta(ge=0, description="a number of random jobs (>= 0)")] = 0
    concurrency: Annotated[int, Meta(ge=1, description="jobs in flight at once (>= 1)")] = 1
    summary_path: Annotated[str | None, Meta(description="a path for the JSON summary")] = None
    start_timeout_s: Annotated[float, _seconds("a positive number")] = 30.0
    accept_timeout_s: Annotated[float, _seconds("a positive number")] = 3.0
    job_timeout_s: Annotated[float, _seconds("a positive number")] = 60.0
    settle_s: Annotated[float, Meta(ge=0, description="seconds (>= 0)")] = 0.1


class MissionJobs(Struct, frozen=True, forbid_unknown_fields=True):
    """The jobs a factory mission's ``[mission]`` table may give (a mission submitted to a
    serving team): when ``jobs`` or ``random_jobs`` is there, the pair replaces the job
    source's own ``jobs`` and ``random_jobs`` (a missing one of the two counts as none)."""

    jobs: Annotated[list[JobEntry], Meta(description="a list of {job, robot, work_s} tables")] = []
    random_jobs: Annotated[int, Meta(ge=0, description="a number of random jobs (>= 0)")] = 0
