"""Leases reach a VDA 5050 AGV through its driver: the AGV knows none, so the driver
keeps the running behaviour's lease and cancels the order when the robot stops
renewing it (the robot froze or lost the broker), the way the simulated body stops by
itself. Against vda-5050-lib's virtual AGV, as the other VDA 5050 tests."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.conftest import AgentProcs, eventually
from tests.vda5050_support import (
    Sniffer,
    VirtualAgv,
    Watcher,
    agv_agents,
    require_virtual_agv,
    team_config,
)

pytestmark = [pytest.mark.integration, pytest.mark.vda5050]


@pytest.fixture(autouse=True)
def _virtual_agv_installed() -> None:
    require_virtual_agv()


async def test_a_lapsed_lease_cancels_the_order_and_renewals_keep_it(
    mosquitto, team, tmp_path: Path, agent_procs
) -> None:
    agents = agv_agents("agv7", "agv7", loads={"pallet1": ("A", "B")})
    config = team_config(tmp_path / "team.toml", team, "pallet1", agents, tmp_path / "run.jsonl")
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    agv = VirtualAgv("agv7", mosquitto.url, tmp_path / "agv7.log",
                     options={"timeLapse": 1, "vehicleSpeed": 0.1})  # fmt: skip
    robot = Watcher("agv7", team=team, endpoint=mosquitto.endpoint)  # stands in for the robot
    host, port = mosquitto.endpoint.host, mosquitto.endpoint.port
    async with Sniffer(host, port) as sniffer, robot:
        agv.start()
        try:
            procs.start("agv7-driver")
            await eventually(
                lambda: any(o["objects"] for o in robot.bodies("observation", "agv7-driver")),
                30,
                what="AGV online in the observations",
            )
            # renewed twice past its first deadline, then left to lapse; the commands
            # are carried out in arrival order, so a renewal follows its execute
            first_ms = lease_ms = int(time.time() * 1000) + 3000
            await robot.command("agv7-driver", "behaviour.execute", command_id="c1", node="n1",
                                behaviour="PLACE", params={"object": "pallet1"},
                                lease_ms=lease_ms, token=[1, 0, "agv7"])  # fmt: skip
            for _ in range(2):  # renew before the deadline, from the robot's clock
                await asyncio.sleep(1.0)
                lease_ms = int(time.time() * 1000) + 3000
                await robot.command("agv7-driver", "behaviour.renew", command_id="c1", node="n1",
                                    lease_ms=lease_ms, token=[1, 0, "agv7"])  # fmt: skip
            failed = await eventually(
                lambda: robot.bodies("behaviour.failed", "agv7-driver"), 20, what="lapse"
            )
            assert lease_ms > first_ms and time.time() * 1000 >= lease_ms  # renewals kept it
            assert robot.bodies("behaviour.started", "agv7-driver")  # the AGV had taken it
            assert failed[0]["command_id"] == "c1"
            assert failed[0]["reason"].startswith("lease_expired")
            await eventually(
                lambda: any(s.payload["nodeStates"] == [] and not s.payload["driving"]
                            for s in sniffer.of("state", "agv7")),
                15, what="the AGV stopped",
            )  # fmt: skip
            own = await agv.own_state()
        finally:
            agv.stop()
    sent = [a["actionType"] for s in sniffer.of("instantActions") for a in s.payload["actions"]]
    assert sent.count("cancelOrder") == 1
    assert own["nodeStates"] == [] and own["driving"] is False
    assert robot.bodies("behaviour.finished", "agv7-driver") == []
    assert "driver.lease_expired" in procs.log("agv7-driver")
