"""``teamtree disturb ROBOT KIND``: inject a disturbance into a live LTL run (seed 003
§III-A) over the broker — a fall (R1), a critical failure (R2), a state change (R3)
or a blocked edge (R4). Wire: docs/ltl.md (``_/ltl.disturb``).

Exit codes: 0 the robot accepted it, 1 it refused or did not answer, 2 bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from teamtree.agents.cli.args import broker_flags, client_tls, log_flags, resolve_team
from teamtree.agents.cli.args import seconds as _seconds
from teamtree.agents.cli.light_client import LightClient
from teamtree.agents.cli.login import add_login_flags, client_login, unreachable_hint
from teamtree.agents.ltl.ltl_wire import DisturbAckWire, DisturbWire, LtlWireError, decode, to_wire
from teamtree.agents.ltl.planner import DISTURB, DISTURBANCES
from teamtree.broker import RequestError, TeamtreeError, TopicError
from teamtree.broker.endpoint import Endpoint
from teamtree.broker.topics import validate_id

__all__ = ["DisturbError", "register", "run_disturb", "send_disturbance"]

ALIASES = {
    "fall": "fall",
    "loss_of_balance": "fall",
    "critical": "critical",
    "critical_failure": "critical",
    "failure": "critical",
    "state_change": "state_change",
    "state": "state_change",
    "blocked_edge": "blocked_edge",
    "blocked": "blocked_edge",
    "edge": "blocked_edge",
    "environment": "blocked_edge",
}

Handler = Callable[[argparse.Namespace], Awaitable[int]]


class DisturbError(TeamtreeError):
    """The disturbance could not be delivered: no such robot, broker unreachable, or no
    answer. ``robot`` and ``reason`` say which and why."""

    def __init__(self, reason: str, *, robot: str | None = None):
        super().__init__(reason)
        self.robot = robot
        self.reason = reason


def _kind(value: str) -> str:
    key = value.strip().lower().replace("-", "_")
    if key not in ALIASES:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a disturbance; expected one of {', '.join(DISTURBANCES)}"
        )
    return ALIASES[key]


def _ident(value: str) -> str:
    try:
        return validate_id(value, "id")
    except TopicError as exc:
        raise argparse.ArgumentTypeError(exc.reason) from None


def _edge(value: str) -> tuple[str, str]:
    parts = [p.strip() for p in value.replace("-", ",").split(",") if p.strip()]
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"{value!r} is not an edge; write A,B (e.g. c3,p6)")
    return parts[0], parts[1]


def register(subparsers: Any) -> dict[str, Handler]:
    """Add the ``disturb`` subcommand to ``subparsers`` (from ``add_subparsers``);
    returns ``{"disturb": handler}``, the handler taking the parsed args and returning
    the exit code."""
    p = subparsers.add_parser(
        "disturb",
        help="inject a disturbance into a live LTL run (fall, critical, state_change, "
        "blocked_edge)",
        description="Send a disturbance to one robot of a running LTL mission over the "
        "broker. fall: a legged robot loses balance (R1 recovery stand). critical: an "
        "irrecoverable failure (R2 global reallocation). state_change: the robot's "
        "operating state jumps (R3; default: a load falls off or a training stops). "
        "blocked_edge: a corridor is blocked (R4; default: the next edge on its plan).",
    )
    p.add_argument("robot", type=_ident, help="the robot's agent id, e.g. A1")
    p.add_argument("kind", type=_kind, metavar="KIND", help=" | ".join(DISTURBANCES))
    broker_flags(p)
    p.add_argument("--config", help="team config (.toml) to read the team and broker from")
    p.add_argument("--mode", help="state_change: the new operating state (e.g. standby)")
    p.add_argument("--region", help="state_change: the new region (default: where it is)")
    p.add_argument("--edge", type=_edge, help="blocked_edge: the edge A,B (both directions)")
    p.add_argument(
        "--scope",
        choices=("map", "robot"),
        default="map",
        help="blocked_edge: blocked for every robot (map, default) or only this one (robot: "
        "e.g. a passage too narrow for it)",
    )
    p.add_argument("--timeout", type=_seconds, default=5.0, help="seconds to wait (default 5)")
    add_login_flags(p)  # under access control only operators may disturb
    log_flags(p)
    return {"disturb": run_disturb}


async def send_disturbance(
    endpoint: Endpoint,
    team: str,
    robot: str,
    kind: str,
    *,
    mode: str | None = None,
    region: str | None = None,
    edge: tuple[str, str] | None = None,
    scope: str = "map",
    timeout: float = 5.0,
    name: str | None = None,
    credentials: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Deliver one disturbance to `robot` and return its answer ``{accepted, detail}``,
    as `name` logged in with `credentials` (an operator's, under access control).
    Blocks up to about 2 × `timeout`. Raises DisturbError when the broker cannot be
    reached, the robot is not a live ``ltl_robot`` of the team, or it does not answer."""
    if kind not in DISTURBANCES:
        raise DisturbError(f"unknown disturbance {kind!r}; expected one of {DISTURBANCES}")
    robot_only = scope if kind == "blocked_edge" and scope != "map" else None
    body = to_wire(DisturbWire(kind, mode, region, edge, robot_only))
    name = name or f"disturb-{uuid.uuid4().hex[:8]}"
    agent = LightClient(
        name, team=team, endpoint=endpoint, tls_context=client_tls(), **(credentials or {})
    )
    async with agent:
        try:
            await agent.wait_connected(timeout)
        except TimeoutError:
            hint = unreachable_hint(name, credentials or {})
            raise DisturbError(f"cannot reach the broker at {endpoint.url}{hint}") from None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + min(timeout, 2.0)
        member = agent.view.get(robot)
        while (member is None or member.kind is None) and loop.time() < deadline:
            await asyncio.sleep(0.02)
            member = agent.view.get(robot)
        if member is None or member.kind is None:
            raise DisturbError(
                f"no agent {robot!r} has announced itself in team {team!r} at {endpoint.url} "
                "(is the run going? pass --team and --broker)",
                robot=robot,
            )
        if member.kind != "ltl_robot":
            raise DisturbError(f"{robot!r} is a {member.kind!r}, not an ltl_robot", robot=robot)
        if not member.online:
            raise DisturbError(f"{robot!r} is {member.presence.value}", robot=robot)
        if kind == "fall" and member.factsheet.get("legged") is False:
            return {
                "accepted": False,
                "detail": f"{robot} is a wheeled {member.factsheet.get('type', 'robot')}; "
                "falls (R1) apply to legged robots only",
            }
        try:
            reply = await agent.request(
                DISTURB, "ltl.disturb", body, to=robot, timeout=timeout, team=True
            )
        except RequestError as exc:
            raise DisturbError(f"{robot} did not answer: {exc}", robot=robot) from None
    try:
        answer = decode(reply.body, DisturbAckWire)
    except LtlWireError as exc:
        raise DisturbError(f"{robot} answered with a {exc}", robot=robot) from None
    return {"accepted": answer.accepted, "detail": answer.detail}


async def run_disturb(args: argparse.Namespace) -> int:
    """The ``disturb`` handler: resolve team and broker, send, print the answer."""
    team, endpoint = resolve_team(args)
    name, credentials = client_login(args, "disturb")
    try:
        answer = await send_disturbance(
            endpoint,
            team,
            args.robot,
            args.kind,
            mode=args.mode,
            region=args.region,
            edge=args.edge,
            scope=args.scope,
            timeout=args.timeout,
            name=name,
            credentials=credentials,
        )
    except DisturbError as exc:
        print(f"teamtree disturb: {exc.reason}", flush=True)
        return 1
    verb = "accepted" if answer["accepted"] else "refused"
    print(f"{args.robot} {verb} {args.kind}: {answer['detail']}", flush=True)
    return 0 if answer["accepted"] else 1
