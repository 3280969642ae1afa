"""Each agent's health as plain ``diagnostic_msgs/DiagnosticStatus`` descriptions, from
the monitor's view of the team (``WebState.snapshot()`` and the heartbeats in
``MonitorState``; pure: no rclpy, no I/O).

One status per agent that announced itself (presence or factsheet), named
``teamtree/<team>/<agent>`` with the agent's id as ``hardware_id``, and one
``teamtree/<team>/broker`` for the bridge's own link to the team. Levels:

===================  ===========================================================
``OK``               ONLINE
``WARN``             ONLINE, but its driver reports robot errors or a battery
                     under ``LOW_BATTERY`` percent
``ERROR``            CONNECTION_BROKEN (it vanished: its Last Will), or ONLINE
                     while its driver says the robot is not connected; the broker
                     link when it is down (then every other status is stale news)
``STALE``            OFFLINE (it left, e.g. an on-call robot between missions) or
                     not heard of yet
===================  ===========================================================

The message says the presence and what the agent does now (the monitor's words);
``values`` carry kind, presence, since, last seen, messages, the heartbeat's figures
and, for a robot driver, battery and connection.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ERROR", "LOW_BATTERY", "OK", "STALE", "WARN", "agent_statuses"]

OK, WARN, ERROR, STALE = 0, 1, 2, 3
#: battery percentage under which a robot's status warns
LOW_BATTERY = 20.0


def _level(presence: str, robot: dict[str, Any] | None) -> tuple[int, str]:
    if presence == "CONNECTION_BROKEN":
        return ERROR, "connection broken (its Last Will)"
    if presence != "ONLINE":
        return STALE, presence.lower() if presence != "UNKNOWN" else "not heard of"
    if robot is None:
        return OK, "online"
    if robot.get("connection") not in (None, "ONLINE"):
        return ERROR, f"online; its robot is {robot['connection']}"
    if robot.get("errors"):
        return WARN, f"online; robot errors: {'; '.join(robot['errors'])}"
    battery = robot.get("battery")
    if isinstance(battery, int | float) and battery < LOW_BATTERY:
        return WARN, f"online; battery {battery:g} %"
    return OK, "online"


def _values(
    row: dict[str, Any], heartbeat: dict[str, Any], robot: dict[str, Any] | None
) -> list[tuple[str, str]]:
    values = [
        ("kind", row.get("kind") or (row.get("factsheet") or {}).get("kind") or ""),
        ("presence", row.get("presence") or ""),
        ("since_ms", row.get("since_ms")),
        ("last_seen_ms", row.get("last_seen_ms")),
        ("messages", row.get("messages")),
        ("now", row.get("status") or ""),
    ]
    values += [(f"heartbeat.{k}", v) for k, v in sorted(heartbeat.items())]
    if robot is not None:
        values += [("robot.connection", robot.get("connection"))]
        values += [("robot.battery", robot.get("battery"))]
    return [(k, "" if v is None else str(v)) for k, v in values]


def _drivers(snap: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Driver id -> the robot its observations report (VDA 5050, ROS 2 drivers)."""
    robots = ((snap.get("map") or {}).get("table") or {}).get("robots") or {}
    return {r["driver"]: r for r in robots.values() if r.get("agv") and r.get("driver")}


def agent_statuses(
    snap: dict[str, Any],
    heartbeats: dict[str, dict[str, Any]],
    *,
    team: str,
    connected: bool,
    broker_url: str = "",
) -> list[dict[str, Any]]:
    """The statuses (dicts with ``level``, ``name``, ``message``, ``hardware_id`` and
    ``values`` as (key, text) pairs) of a snapshot's agents, sorted by name, then the
    broker link's."""
    drivers = _drivers(snap)
    out = []
    for agent, row in sorted((snap.get("agents") or {}).items()):
        kind = row.get("kind") or (row.get("factsheet") or {}).get("kind")
        presence = row.get("presence") or "UNKNOWN"
        if not kind and presence == "UNKNOWN":
            continue  # a client's topic (a login asking the queue), not an agent
        robot = drivers.get(agent)
        level, said = _level(presence, robot)
        now = row.get("status")
        message = f"{said}; {now}" if now and now != "idle" and level != STALE else said
        out.append({
            "level": level,
            "name": f"teamtree/{team}/{agent}",
            "message": message,
            "hardware_id": agent,
            "values": _values(row, heartbeats.get(agent) or {}, robot),
        })  # fmt: skip
    out.append({
        "level": OK if connected else ERROR,
        "name": f"teamtree/{team}/broker",
        "message": "connected" if connected else "not connected: what the bridge shows is stale",
        "hardware_id": "broker",
        "values": [("url", broker_url)],
    })  # fmt: skip
    return out
