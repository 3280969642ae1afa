"""The echo service: answers ``echo.ping`` requests on the team channel ``echo``.

A probe for tests, benchmarks and operators: it proves a team's broker path works
end to end. With ``count_hz`` > 0 it also publishes a numbered ``counter`` message
(QoS 1) at that rate, so an observer can check that nothing is lost across a
broker restart.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import msgspec

from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.config import AgentSpec, TeamConfig
from teamtree.agents.runtime.params import decode_params, params_dict
from teamtree.broker import OutboxFullError
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic

CHANNEL = "echo"
COUNTER_CHANNEL = "counter"


class EchoParams(msgspec.Struct, frozen=True):
    """The echo kind's ``[[agents]]`` keys."""

    count_hz: Annotated[float, msgspec.Meta(ge=0, description="0 (off) or more messages/s")] = 0.0


class EchoAgent(Agent):
    """Reply to every ``echo.ping`` with its body; optionally publish a counter."""

    kind = "echo"

    def __init__(self, *args: Any, count_hz: float = 0.0, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.count_hz = count_hz
        self.counter = 0

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate ``count_hz`` (messages per second, 0 = off)."""
        return params_dict(decode_params(spec, config, EchoParams))

    async def setup(self) -> None:
        self.on_team(CHANNEL, self._on_ping, kind="echo.ping")

    async def _on_ping(self, env: Envelope, topic: Topic) -> None:
        await self.reply(env, "echo.pong", env.body)

    async def main(self) -> None:
        if self.count_hz <= 0:
            await self.wait_stop_requested()
            return
        period = 1.0 / self.count_hz
        while True:
            self.counter += 1
            try:
                await self.publish(COUNTER_CHANNEL, "counter", {"n": self.counter})
            except OutboxFullError:
                self.counter -= 1
                self.log.warning("counter.outbox_full", n=self.counter + 1)
            await asyncio.sleep(period)
