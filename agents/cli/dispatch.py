"""``teamtree submit``, ``missions`` and ``cancel``: dispatch to a running team.

They speak the dispatch protocol (``teamtree.agents.missions.protocol``) to the
team's ``mission_queue`` service. Exit codes: 0 done (``submit --wait``: the mission
succeeded; ``cancel``: the mission is cancelled or cancelling), 1 the broker, the
queue or the mission failed (``cancel``: the mission had already ended, which it says
with its state), 2 a bad mission file (naming file, table and key) or a submission or
cancel the queue rejected (naming the field: an unknown mission id).

Against a broker with access control (``teamtree acl``) they log in as
``--username`` (default ``$TEAMTREE_USERNAME``) with ``--password`` or the password
from the environment, as ``web`` and ``human`` do, and ask on the login's own
``<login>/missions`` topic, so the queue records the broker user who submitted or
cancelled. Without access control, ``--as NAME`` names the requester (recorded as
unverified). They use a light client (``LightClient``): no presence, never a team
member. Team and broker are found as by every command (``find_team``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from teamtree.agents.cli.args import broker_flags, log_flags, resolve_team
from teamtree.agents.cli.args import client_tls as tls
from teamtree.agents.cli.args import ident as _ident
from teamtree.agents.cli.args import seconds as _seconds
from teamtree.agents.cli.light_client import LightClient
from teamtree.agents.cli.login import add_login_flags, client_login, unreachable_hint
from teamtree.agents.missions.protocol import (
    ACCEPTED,
    CANCEL,
    CANCELLED,
    CHANNEL,
    LIST,
    SUBMIT,
    TABLE,
    SubmissionError,
    check_alone,
)
from teamtree.agents.missions.wire import (
    Accepted,
    Cancelled,
    CancelRequest,
    DispatchWireError,
    ListRequest,
    Rejected,
    SubmitRequest,
    Table,
    decode_dispatch,
    to_wire,
)
from teamtree.agents.runtime.config import read_toml
from teamtree.broker import ConfigError, RequestError, TeamtreeError

Handler = Callable[[argparse.Namespace], Awaitable[int]]
ENDED = ("done", "failed", "cancelled")


def register(subparsers: Any) -> dict[str, Handler]:
    """Add ``submit``, ``missions`` and ``cancel``; returns ``{name: handler}``."""

    def common(p: argparse.ArgumentParser) -> None:
        broker_flags(p)
        p.add_argument("--config", help="team config (.toml) to read the team and broker from")
        p.add_argument(
            "--timeout", type=_seconds, default=5.0, help="seconds to wait for the queue"
        )
        add_login_flags(p)
        log_flags(p)

    sub = subparsers.add_parser(
        "submit", help="give a running team a mission",
        description="Send a mission (a TOML file with a [mission] table) to the team's "
        "mission queue; print its id at once (with --wait, wait until it ends).",
    )  # fmt: skip
    sub.add_argument("mission", help="mission file (.toml) with a [mission] table")
    sub.add_argument("--wait", action="store_true", help="wait; exit 0 only if it succeeds")
    common(sub)
    lst = subparsers.add_parser("missions", help="list a team's missions and their outcomes")
    lst.add_argument("--json", action="store_true", help="print the table as JSON")
    common(lst)
    can = subparsers.add_parser("cancel", help="cancel a queued or running mission")
    can.add_argument("id", type=_ident, help="the mission id")
    common(can)
    return {"submit": run_submit, "missions": run_missions, "cancel": run_cancel}


def read_mission_file(path: str) -> dict[str, Any]:
    """The ``[mission]`` table of a mission file, checked; ConfigError naming file and key."""
    try:
        data = read_toml(Path(path).read_text(), path)
    except FileNotFoundError:
        raise ConfigError("file not found; give a mission file (.toml)", path=path) from None
    extra = sorted(set(data) - {"mission"})
    if extra or not isinstance(data.get("mission"), dict):
        raise ConfigError(
            f"expected one [mission] table{f', not {extra}' if extra else ''}",
            path=path,
            key=extra[0] if extra else "mission",
        )
    try:
        check_alone(data["mission"])  # what can be told without the team
    except SubmissionError as exc:
        raise ConfigError(str(exc).split("] ", 1)[-1], path=path, key=exc.field) from None
    return data["mission"]


async def _ask(args: argparse.Namespace, kind: str, body: Any) -> Any:
    team, endpoint = resolve_team(args)
    name, login = client_login(args, "cli")
    client = LightClient(name, team=team, endpoint=endpoint, tls_context=tls(), **login)
    async with client:
        try:
            await client.wait_connected(args.timeout)
        except TimeoutError:
            hint = unreachable_hint(name, login)
            raise TeamtreeError(f"cannot reach the broker at {endpoint.url}{hint}") from None
        if not await client.wait_online("mission_queue", args.timeout):  # still starting?
            raise TeamtreeError(
                f"no mission_queue service is online in team {team!r} at {endpoint.url} "
                f"(waited {args.timeout:g} s; does the team run one?)"
            )
        try:
            # a login asks on its own topic (the broker's word for who asks); a client
            # without one on the team's, so not even a live monitor shows a member for it
            team_channel = not login
            return await client.request(
                CHANNEL, kind, body, timeout=args.timeout, team=team_channel
            )
        except RequestError:
            raise TeamtreeError(
                f"no mission queue answered in team {team!r} at {endpoint.url} within "
                f"{args.timeout:g} s (does the team run a mission_queue service?)"
            ) from None


def _answer(reply: Any) -> Any:
    """A queue's reply body as its declared type; TeamtreeError (exit 1) naming the
    field when the queue sent a malformed one."""
    try:
        return decode_dispatch(reply.kind, reply.body)
    except DispatchWireError as exc:
        raise TeamtreeError(f"the mission queue {reply.sender!r} answered with {exc}") from None


def _rejected(reply: Any, command: str) -> int:
    body: Rejected = _answer(reply)
    print(f"teamtree {command}: rejected: {body.error}", file=sys.stderr, flush=True)
    return 2


async def run_submit(args: argparse.Namespace) -> int:
    """The ``submit`` handler."""
    mission = read_mission_file(args.mission)
    reply = await _ask(args, SUBMIT, to_wire(SubmitRequest(mission)))
    if reply.kind != ACCEPTED:
        return _rejected(reply, "submit")
    accepted: Accepted = _answer(reply)
    mission_id = accepted.id
    print(mission_id, flush=True)
    if not args.wait:
        return 0
    while True:
        await asyncio.sleep(1.0)
        answer = await _ask(args, LIST, to_wire(ListRequest()))
        if answer.kind != TABLE:
            return _rejected(answer, "submit")
        table: Table = _answer(answer)
        row = next((r for r in table.missions if r.id == mission_id), None)
        if row is not None and row.state in ENDED:
            said = row.summary or row.state  # the summary starts with the state
            print(f"{mission_id}: {said}", flush=True)
            return 0 if row.state == "done" else 1


def _fmt_ms(ms: int | None) -> str:
    return "-" if ms is None else time.strftime("%H:%M:%S", time.localtime(ms / 1000))


async def run_missions(args: argparse.Namespace) -> int:
    """The ``missions`` handler."""
    reply = await _ask(args, LIST, to_wire(ListRequest()))
    if reply.kind != TABLE:
        return _rejected(reply, "missions")
    table: Table = _answer(reply)
    rows = to_wire(table)["missions"]
    if args.json:
        print(json.dumps(rows), flush=True)
        return 0
    print(
        f"{'mission':<24} {'kind':<9} {'state':<10} {'submitted':<9} {'ended':<9} "
        f"{'members':<14} {'progress':<16} outcome"
    )
    for row in table.missions:
        r = to_wire(row)
        members = ",".join(r.get("members") or []) or "-"
        status = row.status
        state = status.state if status is not None else r["state"]
        progress = f"{status.done}/{status.total} {status.unit}" if status and status.total else "-"
        said = (status.reason if status is not None else "") or r.get("reason") or ""
        print(
            f"{r['id']:<24} {r['kind']:<9} {state:<10} {_fmt_ms(r['submitted_ms']):<9} "
            f"{_fmt_ms(r['ended_ms']):<9} {members:<14} {progress:<16} "
            f"{r.get('summary') or said}"
        )
    return 0


async def run_cancel(args: argparse.Namespace) -> int:
    """The ``cancel`` handler."""
    reply = await _ask(args, CANCEL, to_wire(CancelRequest(args.id)))
    if reply.kind != CANCELLED:
        body = _answer(reply)
        if isinstance(body, Rejected) and body.field == "state":
            # the mission is known but over: no bad argument, a cancel that came too late
            print(f"teamtree cancel: {body.error}", file=sys.stderr, flush=True)
            return 1
        return _rejected(reply, "cancel")
    cancelled: Cancelled = _answer(reply)
    if cancelled.state in ENDED and cancelled.state != "cancelled":  # an older queue's word
        print(f"teamtree cancel: mission {args.id!r} already ended: {cancelled.state}; "
              "nothing to cancel", file=sys.stderr, flush=True)  # fmt: skip
        return 1
    print(f"{args.id}: {cancelled.state}", flush=True)
    return 0
