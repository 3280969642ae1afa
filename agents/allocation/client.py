"""The requester's side of the allocation service: ask with retries, one request id."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from teamtree.agents.allocation.wire import CHANNEL, ERROR, REQUEST_KINDS
from teamtree.agents.runtime.agent import Agent
from teamtree.broker import ConnectionLostError, RequestError, RequestTimeoutError
from teamtree.broker.envelope import Envelope


class AllocationRefused(RequestError):
    """The service answered ``allocation.error``; `code`, `field` and `replica` say why."""

    def __init__(self, body: Mapping[str, Any], *, replica: str):
        self.code = str(body.get("error", "unknown"))
        self.field = body.get("field")
        self.replica = replica
        self.body = dict(body)
        super().__init__(
            f"allocation service {replica!r} refused ({self.code}): {body.get('message', '')}",
            kind=ERROR,
        )


async def request_allocation(
    agent: Agent,
    kind: str,
    body: Mapping[str, Any],
    *,
    timeout: float,
    attempts: int = 3,
    request_id: str | None = None,
    to: str | None = None,
) -> Envelope:
    """Ask the allocation service; returns the ``allocation.result`` envelope.

    Every attempt carries the same ``request_id`` (made here unless given), so a retry
    after a timeout is answered once even if the first attempt is still being solved by
    a replica that is alive. Blocks up to ``attempts × timeout`` seconds. Raises
    AllocationRefused for an ``allocation.error`` reply, RequestTimeoutError when no
    attempt was answered. An attempt cut by a lost connection (a broker node going)
    counts as one: the next waits up to `timeout` for the reconnect and asks again,
    so the request is not lost; ConnectionLostError when the last attempt was cut.
    """
    if kind not in REQUEST_KINDS:
        raise ValueError(f"unknown allocation request kind {kind!r}")
    payload = {**body, "request_id": request_id or uuid.uuid4().hex}
    last: RequestTimeoutError | None = None
    for attempt in range(attempts):
        try:
            await agent.wait_connected(timeout)
            reply = await agent.request(CHANNEL, kind, payload, to=to, timeout=timeout)
        except ConnectionLostError as exc:
            agent.stats["allocation.retries"] += 1
            agent.log.warning(
                "allocation.retry",
                request_id=payload["request_id"],
                attempt=attempt + 1,
                error=str(exc),
            )
            if attempt + 1 == attempts:
                raise
            continue
        except TimeoutError:  # not reconnected in time
            last = RequestTimeoutError(f"not connected within {timeout} s", kind=kind)
            continue
        except RequestTimeoutError as exc:
            last = exc
            agent.stats["allocation.retries"] += 1
            agent.log.warning(
                "allocation.retry", request_id=payload["request_id"], attempt=attempt + 1
            )
            continue
        if reply.kind == ERROR:
            raise AllocationRefused(reply.body or {}, replica=reply.sender)
        return reply
    raise RequestTimeoutError(
        f"no allocation service answered {kind!r} in {attempts} attempt(s) of {timeout} s",
        kind=kind,
    ) from last
