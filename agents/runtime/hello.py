"""The hello mission: agents announce themselves, exchange one round of requests and
replies over the team channel ``hello``, report who they saw, and stop.

It is the smallest complete mission, used by the README's first command and by the
runtime's integration tests. Parameters (``[[agents]]`` keys): ``peers`` (ids to
wait for; default every other hello member of the config), ``rounds`` (default 1).
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import msgspec

from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.config import AgentSpec, TeamConfig
from teamtree.agents.runtime.params import decode_params, params_dict
from teamtree.broker import ConnectionLostError
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic

CHANNEL = "hello"
STATUS = "status"


class HelloParams(msgspec.Struct, frozen=True):
    """The hello kind's ``[[agents]]`` keys (``peers`` defaults from the config)."""

    peers: Annotated[list[str], msgspec.Meta(description="a list of agent ids")]
    rounds: Annotated[int, msgspec.Meta(ge=1, description="a whole number >= 1")] = 1


class HelloAgent(Agent):
    """Announce, ping every peer once per round, wait until every peer is done."""

    kind = "hello"

    def __init__(self, *args: Any, peers: list[str], rounds: int = 1, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.peers = sorted(set(peers) - {self.id})
        self.rounds = rounds
        self.done_peers: set[str] = set()
        self._all_done = asyncio.Event()

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate ``peers`` and ``rounds``; raises ConfigError naming the key."""
        default = [m.id for m in config.members if m.kind == cls.kind and m.id != spec.id]
        return params_dict(decode_params(spec, config, HelloParams, peers=default))

    async def setup(self) -> None:
        self.on_team(CHANNEL, self._on_ping, kind="hello.ping")
        self.on_agents(STATUS, self._on_status, kind="hello.done")

    async def _on_ping(self, env: Envelope, topic: Topic) -> None:
        round_no = env.body.get("round") if isinstance(env.body, dict) else None
        self.log.info("hello.ping_received", peer=env.sender, round=round_no)
        await self.reply(env, "hello.pong", {"round": round_no, "from": self.id})

    async def _on_status(self, env: Envelope, topic: Topic) -> None:
        if env.sender in self.peers and env.sender not in self.done_peers:
            self.done_peers.add(env.sender)
            self.log.info(
                "hello.peer_done", peer=env.sender, done=len(self.done_peers), of=len(self.peers)
            )
            if self.done_peers >= set(self.peers):
                self._all_done.set()

    async def main(self) -> None:
        await self.wait_connected()
        while not set(self.peers) <= self.team_view.online():
            await asyncio.sleep(0.05)
        self.log.info("hello.team_online", peers=self.peers)
        answered: dict[int, list[str]] = {}
        for round_no in range(1, self.rounds + 1):
            missing = set(self.peers)
            got: set[str] = set()
            for _attempt in range(5):
                try:
                    replies = await self.gather(
                        CHANNEL, "hello.ping", {"round": round_no}, expect=missing
                    )
                except ConnectionLostError:
                    await self.wait_connected()
                    continue
                got |= set(replies)
                missing -= set(replies)
                if not missing:
                    break
                self.log.warning("hello.missing_replies", round=round_no, missing=sorted(missing))
            if missing:
                raise RuntimeError(f"round {round_no}: no reply from {', '.join(sorted(missing))}")
            answered[round_no] = sorted(got)
            self.log.info("hello.round_done", round=round_no, replies=sorted(got))
        await self.publish(STATUS, "hello.done", {"rounds": self.rounds, "saw": self.peers})
        if self.peers:
            await self._all_done.wait()
        self.log.info("hello.saw", peers=self.peers, rounds=self.rounds, answered=answered)
