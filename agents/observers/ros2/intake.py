"""Missions from ROS 2: the JSON text of a ``std_msgs/String`` on the bridge's submit
topic, read and checked as ``teamtree submit`` checks a mission file, and the answer
published back on the result topic (pure: no rclpy, no I/O).

A request is ``{"mission": {...the [mission] table of a mission file...},
"request_id": "..."}`` (``request_id`` optional, any string: it comes back in the
answer so a ROS 2 client can match the two). What can be told without the team
(JSON, the request's keys, the mission's keys and values, its tree) is checked here by
``check_alone``, the same check ``teamtree submit`` makes; the rest (the world's
objects, who serves the kind) by the mission queue. Either way a refusal names the
field:

``{"request_id": "r1", "accepted": false, "field": "mission.tree", "error": "..."}``

and an accepted mission says its id, state and place in the queue:

``{"request_id": "r1", "accepted": true, "id": "m-...", "state": "queued", "position": 0}``
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from teamtree.agents.missions.protocol import SubmissionError, check_alone

__all__ = ["MAX_REQUEST_BYTES", "MissionRequest", "accepted", "read_request", "refused"]

#: the largest request taken (a mission is a few lines)
MAX_REQUEST_BYTES = 64 * 1024
#: the keys of a request
KEYS = ("mission", "request_id")
_SHAPE = '{"mission": {"kind": "tasktree", "tree": "THEN(cup, sugar)"}, "request_id": "r1"}'


@dataclass(frozen=True)
class MissionRequest:
    """A request read from ROS 2: the ``[mission]`` table and the client's id for it."""

    mission: dict[str, Any]
    request_id: str | None = None


class RequestError(SubmissionError):
    """A request refused before it reached the queue; `request_id` is what could be
    read of it (None when it was not JSON, or had none)."""

    def __init__(self, field: str, message: str, request_id: str | None = None):
        super().__init__(field, message)
        self.request_id = request_id


def read_request(text: str) -> MissionRequest:
    """The request in `text`, checked; RequestError naming the field otherwise."""
    if len(text.encode()) > MAX_REQUEST_BYTES:
        raise RequestError("data", f"longer than {MAX_REQUEST_BYTES // 1024} KiB; is it a mission?")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RequestError("data", f"not JSON ({exc}); send {_SHAPE}") from None
    if not isinstance(data, dict):
        raise RequestError("data", f"is a JSON {type(data).__name__}; send an object: {_SHAPE}")
    request_id = data.get("request_id")
    if request_id is not None and not isinstance(request_id, str):
        raise RequestError("request_id", f"is {request_id!r}; give a string or leave it out")
    for key in sorted(set(data) - set(KEYS)):
        raise RequestError(key, f"unknown key; a request has {' and '.join(KEYS)}", request_id)
    if "mission" not in data:
        raise RequestError("mission", f"missing; send {_SHAPE}", request_id)
    try:
        check_alone(data["mission"])
    except SubmissionError as exc:
        raise RequestError(exc.field, str(exc).split("] ", 1)[-1], request_id) from None
    return MissionRequest(data["mission"], request_id)


def refused(request_id: str | None, field: str | None, error: str) -> str:
    """The answer to a refused request, as JSON text."""
    answer = {"request_id": request_id, "accepted": False, "field": field, "error": error}
    return json.dumps(answer)


def accepted(request_id: str | None, reply: dict[str, Any], by: str) -> str:
    """The answer to a request the queue accepted (`reply`: its ``mission.accepted``
    body), as JSON text; `by` is who the queue records as having asked."""
    answer = {
        "request_id": request_id,
        "accepted": True,
        "id": reply.get("id"),
        "state": reply.get("state"),
        "position": reply.get("position"),
        "by": by,
    }
    return json.dumps(answer)
