"""The allocation service: seed 001's allocation and scheduling MILPs behind request/reply.

Requests arrive on the team channel ``_/allocation`` (kinds ``allocation.solve``,
``allocation.allocate``, ``allocation.schedule``); each is answered on
``<service>/reply/<requester>`` with ``allocation.result`` or ``allocation.error``. The
wire contract (bodies, forms, error codes) is in docs/allocation.md.

Solves run in worker threads (``workers``, default 1) so heartbeats and presence keep
flowing, and each solve is bounded by the time left before the request's deadline.
With ``shared = true`` the service joins the shared subscription
``$share/<group>/…`` so replicas split the requests (mosquitto), and connects with a
clean session so a dead replica's share goes to the live ones once the broker notices
(1.5 × keepalive). Requests that carry a
``request_id`` are idempotent: a retry (same requester and id) gets the answer of the
first attempt, computed once. ``request_allocation`` is the requester's side of that.
"""

from __future__ import annotations

# The allocation service in rooms: wire.py (typed bodies, decoding and encoding),
# solve.py (one request's answer), service.py (the agent), client.py (the requester).
# This module keeps the names the kinds, tests and entry point import from it.
from teamtree.agents.allocation.client import AllocationRefused, request_allocation
from teamtree.agents.allocation.service import AllocatorAgent
from teamtree.agents.allocation.solve import MIN_BUDGET_S, SOLVE_SHARE, solve_request
from teamtree.agents.allocation.wire import (
    ALLOCATE,
    ALLOCATION_OPTIONS,
    CHANNEL,
    DEFAULT_ALLOCATION_LIMIT,
    DEFAULT_SCHEDULE_GAP,
    DEFAULT_SCHEDULE_LIMIT,
    ERROR,
    REQUEST_KINDS,
    RESULT,
    SCHEDULE,
    SCHEDULE_OPTIONS,
    SOLVE,
    SOLVERS,
    BadRequest,
    Limits,
    ScheduleBuilder,
    allocation_body,
    error_body,
    parse_general,
    parse_kitting,
    parse_limits,
    parse_scenario,
    parse_schedule,
    schedule_body,
    schedule_from_body,
)

__all__ = [
    "ALLOCATE",
    "ALLOCATION_OPTIONS",
    "CHANNEL",
    "DEFAULT_ALLOCATION_LIMIT",
    "DEFAULT_SCHEDULE_GAP",
    "DEFAULT_SCHEDULE_LIMIT",
    "ERROR",
    "MIN_BUDGET_S",
    "REQUEST_KINDS",
    "RESULT",
    "SCHEDULE",
    "SCHEDULE_OPTIONS",
    "SOLVE",
    "SOLVERS",
    "SOLVE_SHARE",
    "AllocationRefused",
    "AllocatorAgent",
    "BadRequest",
    "Limits",
    "ScheduleBuilder",
    "allocation_body",
    "error_body",
    "parse_general",
    "parse_kitting",
    "parse_limits",
    "parse_scenario",
    "parse_schedule",
    "request_allocation",
    "schedule_body",
    "schedule_from_body",
    "solve_request",
]
