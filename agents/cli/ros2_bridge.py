"""``teamtree ros2-bridge``: publish a running team into ROS 2 and take missions from it.

The bridge (``teamtree.agents.observers.ros2``) watches the team as an observer (never a
member) and publishes, in ``--frame`` (default ``map``) under ``--namespace`` (default
``/teamtree``): ``markers`` (``visualization_msgs/MarkerArray``: robots, objects,
people, goals), ``diagnostics`` (``diagnostic_msgs/DiagnosticArray``: each agent's
health; ``--diagnostics-topic /diagnostics`` for the ROS 2 diagnostic aggregator) and
``mission`` (``std_msgs/String``, JSON: the missions' states and progress). JSON
missions on ``submit`` go to the team's mission queue as ``teamtree submit``'s do;
each answer (accepted with the mission's id, or refused naming the field) comes out on
``submit_result``.

It logs in as ``submit`` does (``--username``/``--password``, or ``--as NAME`` without
access control; default name ``ros2-bridge``): the queue records that name as who
submitted. ROS 2 itself carries no sender identity.

Exit codes: 0 stopped (Ctrl-C, SIGTERM), 1 the broker cannot be reached or the ROS 2
node failed, 2 bad usage or rclpy is not installed.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from teamtree.agents.cli.args import broker_flags, client_tls, log_flags, resolve_team
from teamtree.agents.cli.args import seconds as _seconds
from teamtree.agents.cli.login import add_login_flags, client_login
from teamtree.broker import ConfigError

__all__ = ["register", "run_ros2_bridge"]

Handler = Callable[[argparse.Namespace], Awaitable[int]]

#: the requester's name when the bridge has no login and no ``--as``
DEFAULT_NAME = "ros2-bridge"
_TOPIC = re.compile(r"^/?[A-Za-z][A-Za-z0-9_]*(/[A-Za-z][A-Za-z0-9_]*)*$")
_FRAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_/.-]*$")


def _topic(value: str) -> str:
    """A ROS 2 topic name or namespace, made absolute."""
    if not _TOPIC.match(value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a ROS 2 topic name (letters, digits, _ and /, e.g. /teamtree)"
        )
    return "/" + value.lstrip("/")


def _frame(value: str) -> str:
    if not _FRAME.match(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a frame id (e.g. map, world)")
    return value


def _domain(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a ROS_DOMAIN_ID") from None
    if not 0 <= number <= 232:
        raise argparse.ArgumentTypeError(f"{value!r}: a ROS_DOMAIN_ID is 0 to 232")
    return number


def register(subparsers: Any) -> dict[str, Handler]:
    """Add the ``ros2-bridge`` subcommand; returns ``{"ros2-bridge": handler}``."""
    p = subparsers.add_parser(
        "ros2-bridge",
        help="publish a team into ROS 2 (RViz, Foxglove) and take missions from it",
        description="Watch a running team (never joining it) and publish it into ROS 2: "
        "markers of its robots, objects, people and goals, each agent's health as "
        "diagnostics, the missions' state and progress as JSON; take JSON missions from "
        "a ROS 2 topic to the team's mission queue. Needs rclpy (pip install "
        "'teamtree[ros2]' on CPython 3.11, or a sourced ROS 2 Jazzy).",
    )
    broker_flags(p)
    p.add_argument("--config", help="team config (.toml) to read the team and broker from")
    p.add_argument("--frame", type=_frame, default="map", help="fixed frame (default: map)")
    p.add_argument(
        "--namespace", type=_topic, default="/teamtree",
        help="prefix of the bridge's topics (default: /teamtree)",
    )  # fmt: skip
    p.add_argument(
        "--diagnostics-topic", type=_topic, default=None,
        help="where the health goes (default: <namespace>/diagnostics; /diagnostics feeds "
        "the diagnostic aggregator, but not in a domain where a ros2_driver reads "
        "/diagnostics as its robot's)",
    )  # fmt: skip
    p.add_argument(
        "--domain-id", type=_domain, default=None,
        help="ROS_DOMAIN_ID (default: the environment's)",
    )  # fmt: skip
    p.add_argument(
        "--period", type=_seconds, default=1.0,
        help="seconds between two publications (default 1)",
    )  # fmt: skip
    add_login_flags(p)
    log_flags(p, "info")
    return {"ros2-bridge": run_ros2_bridge}


def _check_rclpy() -> None:
    """ConfigError (exit 2) saying how to install rclpy when it does not import."""
    try:
        import diagnostic_msgs.msg  # noqa: F401
        import rclpy  # noqa: F401
        import std_msgs.msg  # noqa: F401
        import visualization_msgs.msg  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            f"ROS 2 is not installed here ({exc}): pip install 'teamtree[ros2]' (CPython "
            "3.11), or run in a shell that sourced /opt/ros/jazzy",
            key="ros2-bridge",
        ) from None


async def run_ros2_bridge(args: argparse.Namespace) -> int:
    """The ``ros2-bridge`` handler: bridge until SIGINT or SIGTERM."""
    from teamtree.agents.observers.ros2 import BridgeTopics, Ros2Bridge

    _check_rclpy()
    team, endpoint = resolve_team(args)
    name, login = client_login(args, DEFAULT_NAME)
    requester = name if (args.username or args.as_name) else DEFAULT_NAME
    topics = BridgeTopics(args.namespace, args.frame, args.diagnostics_topic)
    bridge = Ros2Bridge(
        endpoint,
        team,
        topics=topics,
        requester=requester,
        tls_context=client_tls(),
        domain_id=args.domain_id,
        period_s=args.period,
        **login,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with bridge:
        await bridge.watch.observer.wait_connected()
        print(
            f"ros2-bridge: team {team} at {endpoint.url} -> ROS 2 "
            f"(domain {args.domain_id if args.domain_id is not None else 'from env'}), frame "
            f"{topics.frame}: {topics.topic('markers')}, {topics.diagnostics_topic}, "
            f"{topics.topic('mission')}; missions on {topics.topic('submit')}, answers on "
            f"{topics.topic('submit_result')}; submitting as {requester}",
            flush=True,
        )
        await bridge.run(stop)
    print("ros2-bridge: stopped", file=sys.stderr, flush=True)
    return 0
