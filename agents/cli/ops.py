"""Operations subcommands: ``monitor``, ``record``, ``attach`` and ``acl``.

- ``teamtree monitor [--broker URL --team T] [--once --json] [--require ID]``
- ``teamtree record --broker URL --team T -o FILE [--duration S]``
- ``teamtree attach --config F --id X --broker URL``: ``teamtree agent`` for a team
  that is already running (checked first)
- ``teamtree acl CONFIG -o DIR``: the broker's password, ACL and mosquitto.conf files

Credentials come from the environment (``teamtree.agents.runtime.credentials``). Exit codes:
0 done, 1 the broker or the team is not there (or ``--require`` failed), 2 bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from teamtree.agents.cli.args import (
    broker_flags,
    client_tls,
    log_flags,
    resolve_team,
    wait_services_flag,
)
from teamtree.agents.cli.args import broker_url as _url
from teamtree.agents.cli.args import ident as _ident
from teamtree.agents.cli.args import port as _port
from teamtree.agents.cli.args import seconds as _seconds
from teamtree.agents.cli.args import setting as _setting
from teamtree.agents.cli.services_wait import (
    optional_services,
    services_to_await,
    wait_for_services,
)
from teamtree.agents.observers.mcap_record import McapRecordFile
from teamtree.agents.observers.mission import MissionProgress
from teamtree.agents.observers.monitor import TeamObserver, render_text
from teamtree.agents.observers.record_channels import warm_schemas
from teamtree.agents.observers.record_file import RecordFile
from teamtree.agents.observers.wire_json import message_record, record_json
from teamtree.agents.runtime.config import load_config
from teamtree.agents.runtime.credentials import agent_credentials, observer_credentials
from teamtree.agents.runtime.current_run import read_current_run
from teamtree.agents.runtime.event_loop import run_main
from teamtree.agents.runtime.kinds import apply_overrides, build_agent, validate_kinds
from teamtree.agents.runtime.priority import apply_nice
from teamtree.agents.runtime.sync_ask import SYNC_GRACE_S as _SYNC_GRACE_S
from teamtree.broker import ConfigError, ConnectError, TeamtreeError
from teamtree.broker.acl import (
    OBSERVER_KINDS,
    agv_login_name,
    agv_user,
    team_users,
    write_broker_files,
)
from teamtree.broker.connection import Incoming
from teamtree.broker.endpoint import Endpoint, parse_endpoint
from teamtree.broker.envelope import Envelope
from teamtree.broker.mosquitto_conf import MosquittoSettings
from teamtree.broker.topics import Topic

__all__ = ["check_team_live", "register"]

Handler = Callable[[argparse.Namespace], Awaitable[int]]
_SETTLE_S = 2.0  # record --until-done: seconds kept recording after the last leaf


def _logging_flags(p: argparse.ArgumentParser) -> None:
    log_flags(p)


def _observer_flags(p: argparse.ArgumentParser, *, login: str = "monitor") -> None:
    broker_flags(p)
    p.add_argument(
        "--mission", type=_ident, default=None,
        help="show only this mission's kept state (default: the running `teamtree run`'s "
        "when watching its team, else every mission's)",
    )  # fmt: skip
    p.add_argument(
        "--user", type=_ident, default=None,
        help="broker user whose credentials to use (from TEAMTREE_PASSWORD_<USER>, "
        f"TEAMTREE_PASSWORD or $TEAMTREE_CREDENTIALS_DIR/<user>; default: {login}, else "
        "monitor)",
    )  # fmt: skip
    p.set_defaults(observer_login=login)


def register(subparsers: Any) -> dict[str, Handler]:
    """Add ``monitor``, ``record``, ``attach`` and ``acl`` to `subparsers` (from
    ``add_subparsers``); returns ``{name: handler}``, each handler taking the parsed
    args and returning the exit code."""
    mon = subparsers.add_parser(
        "monitor",
        help="watch a team live at the broker (agents, nodes, conflicts, latencies, $SYS)",
        description="A live terminal view of a team, from the broker alone: each agent's "
        "kind, presence, current node, status and mission progress; lost claims, dialogs, "
        "favors, request latencies per channel, message rates and mosquitto's $SYS "
        "figures. The monitor does not join the team (no presence, read-only rights).",
    )
    _observer_flags(mon)
    mon.add_argument("--once", action="store_true", help="print one view and exit")
    mon.add_argument("--json", action="store_true", help="print JSON (one object per view)")
    mon.add_argument(
        "--wait", type=_seconds, default=2.0,
        help="with --once: seconds to collect retained state and traffic (default 2)",
    )  # fmt: skip
    mon.add_argument("--interval", type=_seconds, default=1.0, help="refresh period (s)")
    mon.add_argument(
        "--require", type=_ident, action="append", metavar="ID",
        help="with --once: exit 1 unless agent ID is ONLINE (repeatable; for healthchecks)",
    )  # fmt: skip
    mon.add_argument(
        "--require-fact", action="append", metavar="ID:KEY", type=_fact,
        help="with --once: exit 1 unless agent ID's factsheet has a non-empty KEY, e.g. "
        "pr2-driver:world (a driver that reached its world; repeatable)",
    )  # fmt: skip
    _logging_flags(mon)

    rec = subparsers.add_parser(
        "record",
        help="record a team's traffic to an MCAP or JSON-lines file (for Foxglove, "
        "teamtree timeline)",
        description="Write every valid message of the team to FILE (the recorder "
        "service's formats): MCAP when FILE ends in .mcap (Foxglove, Lichtblick and the "
        "mcap tools open it), else one JSON object per line; until Ctrl-C or --duration.",
    )
    _observer_flags(rec, login="record")
    rec.add_argument(
        "-o", "--output", required=True, help="the file to write: RUN.mcap or RUN.jsonl"
    )
    rec.add_argument("--duration", type=_seconds, help="stop after this many seconds")
    rec.add_argument(
        "--until-done", action="store_true",
        help="stop when the mission is done (every leaf, one branch of each OR), as live "
        "messages (not retained ones) report it, and exit 0; exit 1 if --duration passes "
        "first (compose's mission outcome: `up --exit-code-from recorder`)",
    )  # fmt: skip
    _logging_flags(rec)

    att = subparsers.add_parser(
        "attach",
        help="join one more agent of a config to a running team",
        description="Check that the team is live at the broker (an agent online and "
        "heartbeating) and that --id is not already online, then run the agent as "
        "`teamtree agent` does. It learns the mission from the retained topics and "
        "snapshots and starts taking work.",
    )
    att.add_argument("--config", required=True, help="team config (.toml) naming the agent")
    att.add_argument("--id", required=True, type=_ident, help="the agent's id in the config")
    att.add_argument("--broker", type=_url, help="broker URL (default: the config's broker)")
    att.add_argument("--team", type=_ident, help="team id (default: the config's [team] name)")
    att.add_argument(
        "--wait", type=_seconds, default=3.0, help="seconds to look for the live team (default 3)"
    )
    att.add_argument(
        "--set", type=_setting, action="append", metavar="KEY=VALUE",
        help="override KEY on the agent when its kind allows it (repeatable)",
    )  # fmt: skip
    wait_services_flag(att)
    log_flags(att, "info")

    acl = subparsers.add_parser(
        "acl",
        help="write the broker's password and ACL files for a team config",
        description="One broker user per agent of CONFIG and per login of its [access] "
        "table, each writing only under its own id and on the team channels of its role "
        "(robot, driver, person, operator), plus read-only observers (default: monitor, "
        "web, run, health). Passwords from TEAMTREE_PASSWORD_<ID>, else kept from "
        "DIR/credentials, else generated. Writes DIR/passwd, DIR/acl, "
        "DIR/credentials/<user> and, with --conf, DIR/mosquitto.conf (explicit "
        "listeners, no anonymous clients, client ids bound to logins).",
    )
    acl.add_argument("config", help="team config (.toml)")
    acl.add_argument("-o", "--output", required=True, help="directory to write into")
    acl.add_argument("--team", type=_ident, help="team id (default: the config's [team] name)")
    for flag, what in (
        ("--observer", "a read-only login (repeatable; default: [access] observers, else "
         "monitor, web, run and health)"),
        ("--operator", "a login that may dispatch, cancel and disturb (repeatable; adds to "
         "[access] operators)"),
    ):  # fmt: skip
        acl.add_argument(flag, type=_ident, action="append", help=what)
    acl.add_argument(
        "--no-bind-client-ids", dest="bind_client_ids", action="store_false",
        help="with --conf: let clients choose their client ids (then any login can evict "
        "another's session; default: use_username_as_clientid)",
    )  # fmt: skip
    acl.add_argument(
        "--user", type=_ident, action="append", help="an extra login with a robot's rights"
    )
    acl.add_argument("--conf", action="store_true", help="also write mosquitto.conf")
    acl.add_argument("--port", type=_port, default=1883, help="MQTT listener (default 1883)")
    acl.add_argument("--bind", default="0.0.0.0", help="listener address (default 0.0.0.0)")
    acl.add_argument("--websockets-port", type=_port, help="websockets listener, e.g. 9001")
    acl.add_argument("--persistence-dir", help="mosquitto persistence directory")
    acl.add_argument(
        "--config-dir", help="where the broker will see DIR (default DIR), e.g. /mosquitto/config"
    )
    acl.add_argument(
        "--hasher", choices=("auto", "python", "mosquitto_passwd"), default="auto",
        help="who hashes passwords (default: mosquitto_passwd when installed)",
    )  # fmt: skip
    _logging_flags(acl)
    return {"monitor": run_monitor, "record": run_record, "attach": run_attach, "acl": run_acl}


def _fact(value: str) -> tuple[str, str]:
    agent, _, key = value.partition(":")
    if not agent or not key:
        raise argparse.ArgumentTypeError(f"{value!r} is not ID:KEY, e.g. pr2-driver:world")
    return _ident(agent), key


def _observer(args: argparse.Namespace, **kwargs: Any) -> TeamObserver:
    _, endpoint = resolve_team(args)
    mission = args.mission
    current = read_current_run()
    if mission is None and current is not None and current.team == args.team:
        mission = current.mission or None
    user = args.user
    login = agent_credentials(user) if user else observer_credentials(args.observer_login)
    return TeamObserver(
        endpoint,
        args.team,
        tls_context=client_tls(),
        mission_id=mission,
        **login,
        **kwargs,
    )


def _stop_event() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def run_monitor(args: argparse.Namespace) -> int:
    """The ``monitor`` handler."""
    try:
        async with _observer(args) as observer:
            await observer.wait_connected()
            if args.once:
                await asyncio.sleep(args.wait)
                await observer.wait_synced(_SYNC_GRACE_S)  # a broker cluster's state
                snap = observer.state.snapshot()
                size = _terminal_size()
                text = render_text(snap, width=size[0]) if size else render_text(snap)
                print(record_json(snap) if args.json else text, flush=True)
                missing = [a for a in args.require or [] if a not in snap["online"]]
                if missing:
                    print(f"teamtree monitor: not online: {', '.join(missing)}", file=sys.stderr)
                    return 1
                lacking = [
                    f"{agent}:{key}"
                    for agent, key in args.require_fact or []
                    if not (m := observer.state.view.get(agent)) or not m.factsheet.get(key)
                ]
                if lacking:
                    print(f"teamtree monitor: no such fact: {', '.join(lacking)}", file=sys.stderr)
                    return 1
                return 0
            stop = _stop_event()
            screen = not args.json and _terminal_size() is not None
            loop = asyncio.get_running_loop()
            if screen:
                sys.stdout.write(_ENTER_SCREEN)
                # a resized window is redrawn at once, not at the next refresh
                loop.add_signal_handler(signal.SIGWINCH, lambda: _redraw(observer.state.snapshot()))
            try:
                while not stop.is_set():
                    snap = observer.state.snapshot()
                    if args.json:
                        print(record_json(snap), flush=True)
                    elif screen:
                        _redraw(snap)
                    else:
                        print("\n" + render_text(snap), flush=True)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), args.interval)
            finally:
                if screen:
                    loop.remove_signal_handler(signal.SIGWINCH)
                    sys.stdout.write(_LEAVE_SCREEN)
                    sys.stdout.flush()
    except ConnectError as exc:
        print(f"teamtree monitor: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


#: the terminal's alternate screen with the cursor hidden, and back (xterm sequences)
_ENTER_SCREEN = "\x1b[?1049h\x1b[?25l"
_LEAVE_SCREEN = "\x1b[?25h\x1b[?1049l"


def _terminal_size() -> tuple[int, int] | None:
    """(columns, lines) of the terminal stdout writes to, or None when it is none."""
    try:
        if not sys.stdout.isatty():
            return None
        size = os.get_terminal_size(sys.stdout.fileno())
    except (OSError, ValueError):
        return None
    return size.columns, size.lines


def _redraw(snap: dict[str, Any]) -> None:
    """Draw `snap` over the whole screen, fitted to the terminal's size at this moment
    (one line short of its height, so the screen never scrolls the header away)."""
    columns, rows = _terminal_size() or (80, 24)
    lines = render_text(snap, width=columns, height=max(rows - 1, 1)).split("\n")
    sys.stdout.write("\x1b[H" + "".join(line + "\x1b[K\r\n" for line in lines) + "\x1b[J")
    sys.stdout.flush()


async def run_record(args: argparse.Namespace) -> int:
    """The ``record`` handler: the recorder service's line format, from a passive client.
    A file that cannot be written (a full disk) is said once; the lines written stay,
    the mission is still watched (``--until-done``), and the end says it is incomplete."""
    path = Path(args.output)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    progress = MissionProgress()
    finished = asyncio.Event()
    resolve_team(args)  # the team, for the MCAP file's metadata
    if path.suffix == ".mcap":
        await asyncio.to_thread(warm_schemas)  # before it listens: no first message waits
        out: RecordFile | McapRecordFile = McapRecordFile(
            path, metadata={"team": args.team or "", "recorder": "teamtree record"}
        )
    else:
        out = RecordFile(path)
    try:

        def write(env: Envelope, topic: Topic, message: Incoming) -> None:
            nonlocal count
            progress.feed(env, retained=message.retain)
            if args.until_done and progress.complete:
                finished.set()
            record = message_record(
                env,
                topic,
                recorded_ms=time.time_ns() // 1_000_000,
                retained=bool(message.retain),  # left at the broker earlier
            )
            count += 1
            if out.writing and not out.write_record(record):
                print(
                    f"teamtree record: cannot write {path}: {out.failure}; "
                    f"{out.written} message(s) written, recording no more",
                    file=sys.stderr,
                    flush=True,
                )

        try:
            async with _observer(args, sys_topics=False, on_message=write) as observer:
                await observer.wait_connected()
                print(f"recording team {args.team} at {args.broker} to {path}", flush=True)
                stop = _stop_event()
                ends = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(finished.wait())]
                await asyncio.wait(ends, timeout=args.duration, return_when="FIRST_COMPLETED")
                for end in ends:
                    end.cancel()
                if finished.is_set():
                    await asyncio.sleep(_SETTLE_S)  # the members' last words
        except ConnectError as exc:
            print(f"teamtree record: {exc}", file=sys.stderr, flush=True)
            return 1
    finally:
        out.close()
    if out.error is not None:
        print(
            f"recording INCOMPLETE: {out.written} of {count} messages written to {path}: "
            f"{out.failure}",
            flush=True,
        )
    else:
        print(f"recorded {count} messages to {path}", flush=True)
    if not args.until_done:
        return 0 if out.error is None else 1
    if finished.is_set():
        done_by = ", ".join(
            f"{progress.labels[n]} by {a}" for n, a in progress.done.items() if n in progress.labels
        )
        print(f"mission done: {len(progress.leaves)} leaves ({done_by})", flush=True)
        return 0
    missing = ", ".join(progress.missing()) or "the mission tree was never seen"
    print(f"teamtree record: the mission did not finish; not done: {missing}", flush=True)
    return 1


async def check_team_live(
    endpoint: Endpoint,
    team: str,
    agent_id: str,
    *,
    wait_s: float = 3.0,
    credentials: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Look at `team` for `wait_s` seconds. Returns the monitor snapshot when some agent
    is ONLINE and has sent a live (not retained) message meanwhile, and `agent_id` is
    not online already. Raises ConnectError (broker unreachable) or TeamtreeError
    (team not live, id taken) with a sentence that says what to do."""
    live: set[str] = set()

    def heard(env: Envelope, topic: Topic, message: Incoming) -> None:
        if not message.retain:
            live.add(env.sender)

    observer = TeamObserver(
        endpoint,
        team,
        sys_topics=False,
        on_message=heard,
        client_prefix="attach",
        tls_context=client_tls(),
        **(credentials or {}),
    )
    async with observer:
        await observer.wait_connected()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while loop.time() < deadline:
            online = set(observer.state.snapshot()["online"])
            if agent_id in online or online & live:
                break
            await asyncio.sleep(0.1)
        snap = observer.state.snapshot()
    online = set(snap["online"])
    if agent_id in online:
        raise TeamtreeError(
            f"{agent_id!r} is already online in team {team!r} at {endpoint.url}; attaching "
            "it again would take over its session. Stop it first or attach another id."
        )
    if not online & live:
        raise TeamtreeError(
            f"team {team!r} has no live agent at {endpoint.url} (online: "
            f"{', '.join(sorted(online)) or 'none'}). Start the team first (docker compose up, "
            "or teamtree run), or check --broker and --team."
        )
    return snap


async def run_attach(args: argparse.Namespace) -> int:
    """The ``attach`` handler: check the team is live, then run the agent."""
    config = apply_overrides(load_config(args.config), dict(args.set or []))
    validate_kinds(config, only=args.id)
    apply_nice(config.runtime.nice, path=str(config.path))
    spec = config.agent(args.id)
    endpoint = parse_endpoint(args.broker) if args.broker else config.broker
    if endpoint is None:
        raise ConfigError(
            "no broker given: pass --broker mqtt://HOST:PORT of the running team",
            path=str(config.path),
            key="team.broker",
        )
    team = args.team or config.team
    credentials = agent_credentials(args.id)
    try:
        snap = await check_team_live(
            endpoint, team, args.id, wait_s=args.wait, credentials=credentials
        )
    except ConnectError as exc:
        print(f"teamtree attach: {exc}", file=sys.stderr, flush=True)
        return 1
    except TeamtreeError as exc:
        print(f"teamtree attach: {exc}", file=sys.stderr, flush=True)
        return 1
    mission = snap["mission"]
    progress = f", {mission['done']}/{mission['leaves']} leaves done" if mission["leaves"] else ""
    print(
        f"attaching {args.id} ({spec.kind}) to team {team} at {endpoint.url}: online "
        f"{', '.join(snap['online'])}{progress}",
        flush=True,
    )
    try:
        await wait_for_services(
            endpoint,
            team,
            services_to_await(config, spec) if args.wait_services else [],
            within=args.wait_services,
            say=lambda line: print(f"{args.id}: {line}", flush=True),
            tls_context=client_tls(),
            credentials=credentials,
            optional=optional_services(config),
        )
    except TeamtreeError as exc:
        print(f"teamtree attach: {exc}", file=sys.stderr, flush=True)
        return 1
    agent = build_agent(config, args.id, endpoint=endpoint, team=team, **credentials)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, agent.request_stop)
    loop.add_signal_handler(signal.SIGINT, agent.request_stop)
    async with agent:
        return await agent.run_until_stopped()


async def run_acl(args: argparse.Namespace) -> int:
    """The ``acl`` handler: write the broker files for a config's agents."""
    config = load_config(args.config)
    team = args.team or config.team
    out = Path(args.output)
    roles = config.user_roles()
    roles |= {name: "robot" for name in args.user or () if name not in roles}
    roles |= {name: "operator" for name in args.operator or ()}
    agents = {spec.id for spec in config.agents}
    observers = list(args.observer or config.access.observers)
    observers += [n for n, r in roles.items() if r == "observer" and n not in agents]
    users = team_users(
        team,
        [name for name, role in roles.items() if role != "observer" or name in agents],
        observers=observers,
        credentials_dir=out / "credentials",
        watchers=[spec.id for spec in config.agents if spec.kind in OBSERVER_KINDS],
        roles=roles,
    )
    # a VDA 5050 driver's AGV topics on the team's broker: a login of their own
    agv_drivers = [
        spec for spec in config.agents
        if spec.kind == "vda5050_driver" and not spec.params.get("agv_broker")
    ]  # fmt: skip
    for spec in agv_drivers:
        interface = str(spec.params.get("interface_name", "uagv"))
        users.append(agv_user(spec.id, interface, credentials_dir=out / "credentials"))
        roles[agv_login_name(spec.id)] = "driver"
    settings = None
    if args.conf:
        settings = MosquittoSettings(
            port=args.port,
            bind=args.bind,
            websockets_port=args.websockets_port,
            persistence_dir=Path(args.persistence_dir) if args.persistence_dir else None,
            username_as_client_id=args.bind_client_ids,
        )
    files = write_broker_files(
        users, out, settings=settings, config_dir=args.config_dir, hasher=args.hasher
    )
    sources = {u.username: u.source for u in users}
    shown = {u.username: roles.get(u.username, "observer") for u in users}
    print(
        f"wrote {files.password_file}, {files.acl_file}"
        + (f", {files.conf_file}" if files.conf_file else "")
        + f" and {len(users)} credential(s) in {files.credentials_dir}/ for team {team}: "
        + ", ".join(f"{name} ({source})" for name, source in sources.items()),
        flush=True,
    )
    print("roles: " + ", ".join(f"{name} {role}" for name, role in shown.items()), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run one of these subcommands without the main CLI: ``python -m
    teamtree.agents.cli.ops monitor ...`` (what ``teamtree monitor ...`` does)."""
    from teamtree.agents.runtime.log_setup import configure_logging

    parser = argparse.ArgumentParser(prog="teamtree")
    handlers = register(parser.add_subparsers(dest="command", metavar="COMMAND", required=True))
    args = parser.parse_args(argv)
    configure_logging(args.log_format, level=args.log_level, agent=getattr(args, "id", None))
    try:
        return run_main(handlers[args.command](args))
    except ConfigError as exc:
        print(f"teamtree: config error: {exc}", file=sys.stderr)
        return 2
    except TeamtreeError as exc:
        print(f"teamtree: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
