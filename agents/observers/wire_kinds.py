"""The message kinds teamtree agents send, and the declared body type of each kind
that has one: what ``teamtree echo`` checks its ``--kind`` filter against and what
the MCAP recorder turns into each channel's JSON Schema.

A kind without a declared type (``factsheet``, ``world.state``'s extras, a plugin's
own kinds) still travels and is recorded; its body's schema is then any JSON value.
"""

from __future__ import annotations

import fnmatch
import functools
from typing import Any

__all__ = ["KNOWN_KINDS", "body_type", "kinds_matching"]

KNOWN_KINDS: frozenset[str] = frozenset(
    {
        # runtime (docs/protocol.md)
        "presence", "factsheet", "heartbeat", "counter", "echo.ping", "echo.pong",
        "hello.ping", "hello.pong", "hello.done", "sync.request", "sync.done",
        "mission.result", "mission.status", "mission.tree", "mission.started",
        "mission.done", "mission.failed", "mission.submit", "mission.list",
        "mission.cancel", "mission.table", "mission.accepted", "mission.rejected",
        "mission.cancelled",
        # the shared task tree (docs/protocol.md, docs/multitask.md)
        "node.claim", "node.claim_reply", "node.transition", "node.snapshot",
        "node.potentials", "node.interest", "node.interest_ack", "node.interest_acks",
        "node.claim_decided", "node.grasp_scores", "unit.claim", "unit.claim_reply",
        "unit.transition", "unit.snapshot", "multitask.resources", "multitask.summary",
        # bodies: drivers and the world (docs/drivers.md)
        "behaviour.execute", "behaviour.renew", "behaviour.cancel", "behaviour.pause",
        "behaviour.resume", "behaviour.started", "behaviour.paused", "behaviour.resumed",
        "behaviour.finished", "behaviour.failed", "observation", "world.state",
        "world.move_object", "world.move_object.reply", "world.violation",
        # people (docs/humans.md)
        "dialog.ask", "dialog.answer", "dialog.resolved", "tom.belief", "human.started",
        # allocation and kitting (docs/allocation.md)
        "allocation.solve", "allocation.allocate", "allocation.schedule",
        "allocation.result", "allocation.error", "kitting.start", "kitting.plan",
        "kitting.human_action", "kitting.robot_action", "kitting.done",
        # the factory (docs/favors.md)
        "favor.request", "favor.grant", "favor.reject", "favor.accept", "favor.release",
        "favor.revoke", "favor.status", "job.assign", "job.accepted", "job.declined",
        "job.selected", "job.done", "job.failed", "factory.done",
        # LTL missions (docs/ltl.md)
        "ltl.mission", "ltl.plan", "ltl.plan_received", "ltl.step", "ltl.done",
        "ltl.replan", "ltl.replan_result", "ltl.replanned", "ltl.strategy", "ltl.sync",
        "ltl.sync_reply", "ltl.map", "ltl.disturb", "ltl.disturb_ack", "ltl.verdict",
        "ltl.status", "ltl.event", "ltl.trace",
    }
)  # fmt: skip
"""Every kind teamtree's own agents send (docs/*.md's message tables list them)."""


def kinds_matching(pattern: str) -> list[str]:
    """The known kinds `pattern` (a kind, or a glob such as ``node.*``) matches."""
    return sorted(fnmatch.filter(KNOWN_KINDS, pattern))


@functools.cache
def _types() -> dict[str, Any]:
    """Kind -> its body's Struct (or a tuple of Structs: a body is one of them).
    Imported on first use: an echo or a recorder that never needs a schema pays none."""
    from teamtree.agents.allocation import kitting_wire
    from teamtree.agents.allocation.wire import (
        ErrorReply,
        Request,
    )
    from teamtree.agents.capability.favor_wire import LEASE_BODIES, RequestWire
    from teamtree.agents.capability.job_wire import JOB_REPORTS, JobAssign
    from teamtree.agents.ltl import ltl_wire
    from teamtree.agents.missions import wire as mission_wire
    from teamtree.agents.runtime.behaviour_wire import COMMAND_BODIES, PROGRESS_KINDS, Progress
    from teamtree.agents.runtime.mission_status import MissionStatus
    from teamtree.agents.runtime.observation_wire import ObservationBody, WorldStateBody
    from teamtree.agents.runtime.outcome import ResultBody
    from teamtree.agents.runtime.presence_wire import HeartbeatBody, PresenceBody
    from teamtree.agents.runtime.resync import SyncDoneBody, SyncRequestBody
    from teamtree.agents.treeprotocol import dialog_wire
    from teamtree.agents.treeprotocol.decided_wire import ClaimDecidedWire
    from teamtree.agents.treeprotocol.mission_wire import MissionTreeBody
    from teamtree.agents.treeprotocol.peer_wire import (
        ClaimWire,
        InterestAcksWire,
        InterestAckWire,
        InterestWire,
        PotentialsWire,
        ReplyWire,
        SnapshotWire,
        TransitionWire,
    )
    from teamtree.agents.world.wire import MoveObject

    types: dict[str, Any] = {
        "presence": PresenceBody,
        "heartbeat": HeartbeatBody,
        "sync.request": SyncRequestBody,
        "sync.done": SyncDoneBody,
        "mission.result": ResultBody,
        "mission.status": MissionStatus,
        "mission.tree": MissionTreeBody,
        "node.claim": ClaimWire,
        "node.claim_reply": ReplyWire,
        "node.transition": TransitionWire,  # a multitask robot's adds keys of its own
        "node.snapshot": SnapshotWire,
        "node.potentials": PotentialsWire,
        "node.interest": InterestWire,
        "node.interest_ack": InterestAckWire,
        "node.interest_acks": InterestAcksWire,
        "node.claim_decided": ClaimDecidedWire,
        "observation": ObservationBody,
        "world.state": WorldStateBody,
        "world.move_object": MoveObject,
        "allocation.solve": Request,
        "allocation.allocate": Request,
        "allocation.schedule": Request,
        # allocation.result: a solve's reply is a plain map (allocation, schedule, ...)
        "allocation.error": ErrorReply,
        "favor.request": RequestWire,
        "job.assign": JobAssign,
        **COMMAND_BODIES,
        **{f"behaviour.{name}": Progress for name in PROGRESS_KINDS},
        **dialog_wire.BODIES,
        **kitting_wire.BODIES,
        **LEASE_BODIES,
        **JOB_REPORTS,
        **ltl_wire.BODIES,
        **mission_wire.BODIES,
    }
    return types


def body_type(kind: str) -> Any:
    """The declared body type of `kind`: a Struct, a tuple of Structs (one of them),
    or None (no declared type: any JSON value)."""
    return _types().get(kind)
