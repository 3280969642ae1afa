"""The ``teamtree`` command line.

Exit codes: 0 done, 1 the mission or an agent failed, 2 bad config or usage,
130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import importlib
import json
import os
import signal
import sys
from collections.abc import Sequence

# Many agent processes share one machine and numpy serves them small vectors only: one
# BLAS thread each (OpenBLAS otherwise starts one per core in every process, which cost
# 0.08 CPU s of each agent's start here). Set before any command imports numpy; agents
# that ``run`` starts inherit it; a value the user set wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from teamtree.agents.cli.args import (
    LOG_FORMATS,
    LOG_LEVELS,
    client_tls,
    find_team,
    wait_services_flag,
)
from teamtree.agents.cli.args import agent_id as _agent_id
from teamtree.agents.cli.args import agent_ids as _agent_ids
from teamtree.agents.cli.args import broker_url as _broker_url
from teamtree.agents.cli.args import mission_id as _mission_id
from teamtree.agents.cli.args import port as _port
from teamtree.agents.cli.args import seconds as _positive
from teamtree.agents.cli.args import setting as _setting
from teamtree.agents.cli.args import team_id as _team_id
from teamtree.agents.cli.preflight import check_broker
from teamtree.agents.runtime.config import by_agent_id, load_config, parse_mission
from teamtree.agents.runtime.credentials import agent_credentials
from teamtree.agents.runtime.event_loop import run_main
from teamtree.agents.runtime.kinds import AGENT_KINDS, apply_overrides, build_agent, validate_kinds
from teamtree.agents.runtime.log_setup import configure_logging
from teamtree.agents.runtime.mission import MISSION_ENV
from teamtree.agents.runtime.priority import apply_nice
from teamtree.broker import ConfigError, TeamtreeError
from teamtree.broker.broker_kind import BrokerKind
from teamtree.broker.endpoint import parse_endpoint
from teamtree.broker.tls import TlsSettings, client_context

# An agent process starts with this module: what only other commands need (observers,
# the task tree's planner, matplotlib, the web view, the study) is imported inside them.


def _overrides(args: argparse.Namespace) -> dict[str, object]:
    out = dict(args.set or [])
    if getattr(args, "metric", None):
        out["metric"] = args.metric
    return out


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of ``teamtree`` and its subcommands.

    With `command` one of the built-in commands (``run``, ``agent``, ...), the commands
    kept in their own modules are not registered (nor imported): an agent process starts
    faster. None or any other word: every command."""
    parser = argparse.ArgumentParser(
        prog="teamtree",
        description="Run heterogeneous human-robot teams as agent processes over MQTT.",
        epilog="Start with: teamtree run configs/hello.toml",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def override_flags(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--metric", choices=["distance", "distance+grasp"],
            help="activation metric of every robot (seed 000 eq. 1): distance only, or "
            "distance plus grasp score",
        )  # fmt: skip
        p.add_argument(
            "--set", type=_setting, action="append", metavar="KEY=VALUE",
            help="override KEY on every agent whose kind allows it (repeatable)",
        )  # fmt: skip

    def logging_flags(p: argparse.ArgumentParser, default_format: str) -> None:
        p.add_argument(
            "--log-format", choices=LOG_FORMATS, default=default_format,
            help=f"log lines as key=value (plain) or JSON (default: {default_format})",
        )  # fmt: skip
        p.add_argument("--log-level", choices=LOG_LEVELS, default="info", help="default: info")

    run = sub.add_parser(
        "run",
        help="run a whole team from a config on this machine",
        description="Start a broker (unless the config or --broker names one), the services "
        "and every member agent as child processes; exit 0 when the mission ends.",
    )
    run.add_argument("config", help="team config (.toml), e.g. configs/hello.toml")
    run.add_argument(
        "--broker", type=_broker_url,
        help="use this broker instead of starting one (URL, or a cluster's URLs comma-separated)",
    )  # fmt: skip
    run.add_argument(
        "--broker-kind", choices=[k.value for k in BrokerKind],
        help="local broker to start: mosquitto if installed (auto), mosquitto, or embedded",
    )  # fmt: skip
    run.add_argument("--timeout", type=_positive, help="mission timeout in seconds")
    run_mission = run.add_mutually_exclusive_group()
    run_mission.add_argument(
        "--mission-id", type=_mission_id, help="the new mission's id (default: a fresh one)"
    )
    run_mission.add_argument(
        "--resume", type=_mission_id, metavar="MISSION_ID",
        help="continue this mission: keep the state it left at the broker",
    )  # fmt: skip
    run.add_argument(
        "--without", type=_agent_ids, action="append", metavar="ID[,ID]",
        help="do not start these members (e.g. a simulated human): a person takes the "
        "place with `teamtree human --id ID` (repeatable)",
    )  # fmt: skip
    override_flags(run)
    logging_flags(run, "plain")

    agent = sub.add_parser(
        "agent",
        help="run one agent of a config (what compose and attach use)",
        description="Run the agent --id from --config until its mission ends or it is stopped.",
    )
    agent.add_argument("--config", required=True, help="team config (.toml)")
    agent.add_argument("--id", required=True, type=_agent_id, help="the agent's id in the config")
    agent.add_argument(
        "--broker", type=_broker_url,
        help="broker URL, e.g. mqtt://127.0.0.1:1883 (a cluster: its URLs comma-separated)",
    )  # fmt: skip
    agent.add_argument("--team", type=_team_id, help="team id (default: the config's [team] name)")
    agent.add_argument(
        "--mission-json", metavar="JSON",
        help="replace the config's [mission] table (what a mission queue passes)",
    )  # fmt: skip
    agent.add_argument(
        "--members", type=_agent_ids, metavar="ID,ID",
        help="the on_call agents working this mission with it; they count as the config's "
        "members (what a mission queue passes)",
    )  # fmt: skip
    agent.add_argument(
        "--mission-id", type=_mission_id, default=os.environ.get(MISSION_ENV) or None,
        help=f"the mission the agent works for (default: ${MISSION_ENV}; none: unscoped)",
    )  # fmt: skip
    wait_services_flag(agent)
    override_flags(agent)
    logging_flags(agent, "auto")

    broker = sub.add_parser(
        "broker",
        help="start a local MQTT broker",
        description="Start mosquitto (when installed) or the embedded amqtt broker and "
        "serve until Ctrl-C.",
    )
    broker.add_argument(
        "--kind", choices=[k.value for k in BrokerKind], default="auto", help="default: auto"
    )
    broker.add_argument("--port", type=_port, default=1883, help="default: 1883")
    broker.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    logging_flags(broker, "auto")

    tree = sub.add_parser(
        "tree",
        help="print a config's task tree with node states",
        description="Print the task tree of a config. With --broker, the states are read "
        "from the robots' retained snapshots on that broker; otherwise the initial states.",
    )
    tree.add_argument("config", help="team config (.toml) with a [mission] tree")
    tree.add_argument(
        "--broker", type=_broker_url,
        help="read live states from this broker (--live: found as by every command: "
        "$TEAMTREE_BROKER, else the running `teamtree run`'s)",
    )  # fmt: skip
    tree.add_argument(
        "--live", action="store_true", help="read live states from the running `teamtree run`"
    )
    tree.add_argument("--team", type=_team_id, help="team id (default: the config's [team] name)")
    tree.add_argument(
        "--mission", type=_mission_id,
        help="the mission to show (default: the running `teamtree run`'s, else the newest)",
    )  # fmt: skip
    tree.add_argument("--wait", type=_positive, default=1.0, help="seconds to collect snapshots")
    tree.add_argument(
        "--user", type=_agent_id, default="monitor",
        help="with --broker: the observer user whose credentials to use (from "
        "TEAMTREE_PASSWORD_<USER>, TEAMTREE_PASSWORD or $TEAMTREE_CREDENTIALS_DIR/<user>; "
        "default: monitor); tree reads as an observer and never joins the team",
    )  # fmt: skip
    logging_flags(tree, "auto")

    timeline = sub.add_parser(
        "timeline",
        help="draw per-robot timing diagrams from a recorded run",
        description="Draw one panel per robot, one row per behaviour, coloured inactive / "
        "active / working / done, from a recorder's .mcap or .jsonl file (or a directory "
        "of them), "
        "for one mission; a failed, timed-out or cancelled mission is marked in red where "
        "it ended and in the title.",
    )
    timeline.add_argument(
        "run", help="a recorder's .mcap or .jsonl file, or a directory holding one"
    )
    timeline.add_argument("-o", "--output", default="timeline.png", help="PNG to write")
    timeline.add_argument("--title", default="", help="figure title")
    timeline.add_argument(
        "--mission", type=_mission_id,
        help="the mission to draw (default: the record's last; a record may hold several)",
    )  # fmt: skip
    logging_flags(timeline, "auto")

    if command not in COMMANDS:
        for module in EXTRA_COMMANDS:
            COMMANDS.update(importlib.import_module(module).register(sub))
    return parser


async def _run(args: argparse.Namespace) -> int:
    from teamtree.agents.cli.names_check import check_names
    from teamtree.agents.runtime.launcher import Launcher

    config = load_config(args.config)
    overrides = _overrides(args)
    validate_kinds(apply_overrides(config, overrides))
    check_names(config)
    without = frozenset(i for ids in args.without or () for i in ids)
    members = {spec.id for spec in config.members}
    for agent_id in sorted(without - members):
        raise ConfigError(
            f"{agent_id!r} is not a member of this config (members: "
            f"{', '.join(sorted(members)) or 'none'}); services cannot be left out",
            path=str(config.path),
            key="--without",
        )
    apply_nice(config.runtime.nice, path=str(config.path))  # the broker and agents inherit it
    launcher = Launcher(
        config,
        broker=parse_endpoint(args.broker) if args.broker else None,
        broker_kind=BrokerKind(args.broker_kind) if args.broker_kind else None,
        timeout_s=args.timeout,
        log_format="json" if args.log_format == "json" else "plain",
        log_level=args.log_level,
        overrides=overrides,
        mission_id=args.resume or args.mission_id,
        resume=args.resume is not None,
        without=without,
    )
    return await launcher.run()


async def _agent(args: argparse.Namespace) -> int:
    config = apply_overrides(load_config(args.config), _overrides(args))
    if args.mission_json:
        try:
            table = json.loads(args.mission_json)
        except ValueError as exc:
            raise ConfigError(f"not JSON: {exc}", key="--mission-json") from None
        config = dataclasses.replace(config, mission=parse_mission(table, config.path))
    validate_kinds(config, only=args.id)
    apply_nice(config.runtime.nice, path=str(config.path))
    if args.members:  # after the checks: the queue's entry reads the on_call roles
        from teamtree.agents.missions.protocol import mission_config

        config = mission_config(config, config.mission, args.members)
    endpoint = parse_endpoint(args.broker) if args.broker else config.broker
    if endpoint is None:
        raise ConfigError(
            "no broker given: pass --broker mqtt://HOST:PORT or set broker in [team]",
            path=str(config.path),
            key="team.broker",
        )
    tls = TlsSettings.from_env()
    tls_context = client_context(tls) if tls else None
    if args.wait_services:  # (imports the observer only when there is something to await)
        from teamtree.agents.cli.services_wait import (
            optional_services,
            services_to_await,
            wait_for_services,
        )

        await wait_for_services(
            endpoint,
            args.team or config.team,
            services_to_await(config, config.agent(args.id)),
            within=args.wait_services,
            say=lambda line: print(f"{args.id}: {line}", flush=True),
            tls_context=tls_context,
            credentials=agent_credentials(args.id),
            optional=optional_services(config),
            mission_id=args.mission_id,
        )
    agent = build_agent(
        config,
        args.id,
        endpoint=endpoint,
        team=args.team,
        tls_context=tls_context,
        mission_id=args.mission_id,
        **agent_credentials(args.id),
    )
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, agent.request_stop)
    loop.add_signal_handler(signal.SIGINT, agent.request_stop)
    async with agent:
        return await agent.run_until_stopped()


async def _broker(args: argparse.Namespace) -> int:
    from teamtree.broker.local_broker import make_local_broker

    broker = make_local_broker(args.kind, args.port, host=args.host)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    async with broker:
        print(f"{broker.kind.value} broker listening at {broker.endpoint.url}", flush=True)
        await stop.wait()
    return 0


async def _tree(args: argparse.Namespace) -> int:
    from teamtree.agents.observers.mission import read_snapshots
    from teamtree.agents.runtime.current_run import read_current_run
    from teamtree.agents.runtime.mission import mission_of
    from teamtree.agents.treeprotocol.mission_config import mission_tree
    from teamtree.agents.treeprotocol.peer_wire import working_leaves
    from teamtree.planners.tasktree import NodeStatus, TaskController, render_unicode

    config = load_config(args.config)
    tree = mission_tree(config)
    if not args.live and args.broker is None:
        statuses = TaskController(tree, "viewer").statuses()
        print(render_unicode(tree, statuses))
        return 0
    team, endpoint = find_team("tree", args.team, args.broker, args.config)
    args.broker = endpoint.urls
    current = read_current_run()
    snapshots = await read_snapshots(
        endpoint, team, args.wait, tls_context=client_tls(), **agent_credentials(args.user)
    )
    mission = args.mission
    if mission is None and current is not None and current.team == team:
        mission = current.mission or None
    if mission is None:  # the newest: generated mission ids sort by their start time
        named = [m for m in map(mission_of, snapshots.values()) if m is not None]
        mission = max(named) if named else None
    if mission is not None:
        snapshots = {a: s for a, s in snapshots.items() if mission_of(s) == mission}
    print(f"team {team}, mission {mission or '(unscoped)'}")
    done = {n for snap in snapshots.values() for n in snap.get("done", [])}
    working = {}
    for agent, snap in snapshots.items():
        with contextlib.suppress(ValueError):
            working.update(dict.fromkeys(working_leaves(snap.get("working")), agent))
    controller = TaskController(tree, "viewer")
    controller.done.update(n for n in done if n in tree.nodes)
    statuses = controller.statuses()
    for node in working:
        if node in statuses:
            statuses[node] = NodeStatus.WORKING
    print(render_unicode(tree, statuses))
    for node, agent in sorted(working.items()):
        print(f"{agent} is working on {tree[node].label} [{node}]")
    print(f"({len(snapshots)} robot snapshot(s) read from {args.broker})")
    return 0


async def _timeline(args: argparse.Namespace) -> int:
    from teamtree.agents.observers.timeline import (
        draw_timeline,
        load_records,
        missions_in,
        pick_mission,
    )

    records = load_records(args.run)
    mission = pick_mission(records, args.mission)
    path = draw_timeline(records, args.output, title=args.title or str(args.run), mission=mission)
    others = [m for m in missions_in(records) if m != mission]
    drew = f" (mission {mission}; the record also holds {', '.join(others)}: --mission ID)"
    print(f"wrote {path}" + (drew if others else ""))
    return 0


#: modules of the subcommands kept apart, each with ``register(subparsers) -> {name: handler}``
EXTRA_COMMANDS = [
    "teamtree.agents.cli.disturb",
    "teamtree.agents.cli.study",
    "teamtree.agents.cli.ops",
    "teamtree.agents.cli.human",
    "teamtree.agents.cli.kinds",
    "teamtree.agents.cli.web",
    "teamtree.agents.cli.dispatch",
    "teamtree.agents.cli.ros2_bridge",
    "teamtree.agents.cli.echo",
    "teamtree.agents.cli.recordings",
    "teamtree.agents.cli.live",
]

COMMANDS = {
    "run": _run,
    "agent": _agent,
    "broker": _broker,
    "tree": _tree,
    "timeline": _timeline,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``teamtree`` console script; returns the exit code."""
    words = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(words[0] if words else None).parse_args(argv)
    configure_logging(args.log_format, level=args.log_level, agent=getattr(args, "id", None))
    try:
        check_broker(args)
        return run_main(COMMANDS[args.command](args))
    except ConfigError as exc:
        print(f"teamtree: config error: {by_agent_id(exc)}", file=sys.stderr)
        return _exit_code("EXIT_USAGE")
    except TeamtreeError as exc:
        print(f"teamtree: error: {exc}", file=sys.stderr)
        return _exit_code("EXIT_FAILED")
    except KeyboardInterrupt:
        return _exit_code("EXIT_INTERRUPTED")


def _exit_code(name: str) -> int:
    """The launcher's exit code `name` (the launcher is imported only on these paths)."""
    from teamtree.agents.runtime import launcher

    return int(getattr(launcher, name))


def _exit() -> None:
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())


__all__ = ["AGENT_KINDS", "build_parser", "main"]
