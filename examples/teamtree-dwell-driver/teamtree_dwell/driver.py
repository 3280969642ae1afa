"""``dwell_driver``: the smallest complete teamtree driver, as a plugin.

Its "body" carries out a behaviour by waiting ``dwell_s`` seconds, which is all a dry
run of a mission needs, and it shows the whole contract a driver keeps with its robot
agent (teamtree's docs/drivers.md):

- commands arrive on ``<robot>/command/<me>``: ``behaviour.execute`` (command_id,
  node, behaviour, params), ``behaviour.cancel`` / ``.pause`` / ``.resume``;
- progress goes out on ``<me>/progress``: ``behaviour.started``, ``.paused``,
  ``.resumed``, ``.finished`` or ``.failed`` with the command_id, node and a reason;
- observations go out on ``<me>/observation``: the robot's arm position and the
  objects the mission's leaves name; the robot scores leaves by distance to them.

Config keys: ``agent`` (the robot agent; default: the one whose driver this is),
``dwell_s`` (seconds per behaviour), ``objects`` (name -> [x, y, z]).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from teamtree.agents import Agent, AgentSpec, TeamConfig, spec_reader
from teamtree.broker import TeamtreeError


class DwellDriverAgent(Agent):
    """Carries out every behaviour by waiting; reports progress like a real driver."""

    kind = "dwell_driver"

    def __init__(
        self, *args: Any, agent: str, dwell_s: float, objects: dict[str, list[float]], **kw: Any
    ):
        super().__init__(*args, **kw)
        self.agent = agent
        self.dwell_s = dwell_s
        self.objects = objects
        self.done: set[str] = set()
        self.running: dict[str, asyncio.Task[None]] = {}
        self.paused: set[str] = set()

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate ``agent``, ``dwell_s`` and ``objects``; errors name the key."""
        reader = spec_reader(spec, config)
        mine = [a.id for a in config.agents if a.params.get("driver") == spec.id]
        agent = reader.ident("agent", mine[0] if mine else None)
        dwell = reader.positive("dwell_s", 0.5, "a positive number of seconds")
        objects = reader.take("objects", dict, {}, "a table of name = [x, y, z]")
        for name, pos in objects.items():
            if not (isinstance(pos, list) and len(pos) == 3):
                raise reader.error("objects", f"{name} is {pos!r}; expected [x, y, z]")
        reader.no_extras()
        return {"agent": agent, "dwell_s": dwell, "objects": objects}

    async def setup(self) -> None:
        self.on_agents("command", self._on_command, addressed=True)

    async def _on_command(self, env: Any, topic: Any) -> None:
        body = env.body if isinstance(env.body, dict) else {}
        if env.sender != self.agent or not isinstance(body.get("command_id"), str):
            return  # not our robot, or malformed: ignored, never fatal
        cid = body["command_id"]
        if env.kind == "behaviour.execute" and cid not in self.running:
            self.running[cid] = self.spawn(self._execute(cid, body), "execute", optional=True)
        elif env.kind == "behaviour.cancel" and cid in self.running:
            self.running.pop(cid).cancel()
            await self._progress("failed", cid, body.get("node"), "cancelled")
        elif env.kind == "behaviour.pause" and cid in self.running:
            self.paused.add(cid)
            await self._progress("paused", cid, body.get("node"))
        elif env.kind == "behaviour.resume" and cid in self.paused:
            self.paused.discard(cid)
            await self._progress("resumed", cid, body.get("node"))

    async def _execute(self, cid: str, body: dict[str, Any]) -> None:
        node = body.get("node")
        await self._progress("started", cid, node)
        left = self.dwell_s
        while left > 0:
            await asyncio.sleep(0.05)
            if cid not in self.paused:
                left -= 0.05
        name = (body.get("params") or {}).get("object")
        if isinstance(name, str):
            self.done.add(name)
        self.running.pop(cid, None)
        await self._progress("finished", cid, node)

    async def _progress(self, kind: str, cid: str, node: Any, reason: str | None = None) -> None:
        body = {"command_id": cid, "node": node, "robot": self.agent,
                "ok": kind != "failed", "reason": reason, "t": time.time()}  # fmt: skip
        with contextlib.suppress(TeamtreeError):
            await self.publish("progress", f"behaviour.{kind}", body)

    async def main(self) -> None:
        while True:
            objects = {
                name: {
                    "shape": "box",
                    "dims": [0.1, 0.1, 0.1],
                    "position": pos,
                    "at_goal": name in self.done,
                }
                for name, pos in self.objects.items()
            }
            robot = {"name": self.agent, "arm": [0.0, 0.0, 0.8], "base": [0.0, 0.0, 0.0],
                     "yaw": 0.0, "busy": bool(self.running)}  # fmt: skip
            with contextlib.suppress(TeamtreeError):
                await self.publish(
                    "observation", "observation",
                    {"t": time.time(), "robot": robot, "objects": objects}, qos=0,
                )  # fmt: skip
            await asyncio.sleep(0.2)
