"""The VDA 5050 driver against a VDA 5050 implementation nobody here wrote: vda-5050-lib's
AgvController + VirtualAgvAdapter (npm, pinned in tests/vda5050), run under Node as a
child process against mosquitto. Every message on the VDA 5050 topics is validated
against the official JSON schemas by an independent sniffer; each test asserts zero
failures."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import AgentProcs, eventually, teamtree_cmd
from tests.vda5050_support import (
    Sniffer,
    VirtualAgv,
    agv_agents,
    progress,
    read_records,
    require_virtual_agv,
    team_config,
)

pytestmark = [pytest.mark.integration, pytest.mark.vda5050]


@pytest.fixture(autouse=True)
def _virtual_agv_installed() -> None:
    require_virtual_agv()


def _assert_valid(sniffer: Sniffer) -> None:
    bad = sniffer.failures()
    assert not bad, [(s.subtopic, s.serial, s.errors[:2]) for s in bad[:5]]
    print("VDA 5050 messages validated:", sniffer.counts(), "failures: 0")


async def _run_team(config: Path, broker_url: str, log: Path, timeout: float = 120) -> int:
    proc = await asyncio.create_subprocess_exec(
        *teamtree_cmd("run", str(config), "--broker", broker_url, "--log-format", "json"),
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )
    try:
        return await asyncio.wait_for(proc.wait(), timeout)
    except TimeoutError:
        proc.terminate()
        await proc.wait()
        raise AssertionError(f"team did not finish: {log.read_text()[-3000:]}") from None


async def test_mission_with_sim_robot_and_virtual_agv(mosquitto, team, tmp_path: Path) -> None:
    """A simulated PR2 places the cup; the AGV drives to A, picks pallet1, drops it at
    B, then drives to the dock. The recorder shows the AGV's nodes done and the AGV's
    own state agrees (last node dock, no load)."""
    record = tmp_path / "run.jsonl"
    agents = agv_agents("agv7", "agv7", loads={"pallet1": ("A", "B")})
    from tests.vda5050_support import SIM_AGENTS

    config = team_config(
        tmp_path / "team.toml", team, "AND(cup, THEN(pallet1, MOVE(dock)))", SIM_AGENTS + agents, record
    )
    agv = VirtualAgv("agv7", mosquitto.url, tmp_path / "agv7.log")
    async with Sniffer(mosquitto.endpoint.host, mosquitto.endpoint.port) as sniffer:
        agv.start()
        try:
            code = await _run_team(config, mosquitto.url, tmp_path / "team.log")
            await asyncio.sleep(0.5)
        finally:
            own = agv.stop()
    assert code == 0, (tmp_path / "team.log").read_text()[-3000:]
    records = read_records(record)
    finished = progress(records, "behaviour.finished", "agv7-driver")
    assert len(finished) == 2, finished
    done = {
        (r["body"]["agent"], r["body"]["node"])
        for r in records
        if r.get("kind") == "node.transition" and r["body"]["status"] == "done"
    }
    assert {a for a, _ in done} == {"pr2", "agv7"}
    assert len(done) == 3
    assert own is not None
    assert own["lastNodeId"] == "dock"
    assert own["loads"] == []
    assert own["errors"] == []
    orders = sniffer.of("order", "agv7")
    assert len(orders) == 2
    # the second behaviour extends the first order (order update stitched at B)
    assert orders[1].payload["orderId"] == orders[0].payload["orderId"]
    assert orders[1].payload["orderUpdateId"] == 1
    actions = [a["actionType"] for o in orders for n in o.payload["nodes"] for a in n["actions"]]
    assert actions == ["pick", "drop"]
    # the factsheet came on request and fed the driver's capabilities
    assert sniffer.of("factsheet", "agv7")
    capabilities = [
        r["body"]["capabilities"]
        for r in records
        if r.get("kind") == "factsheet" and r.get("sender") == "agv7-driver"
    ]
    assert any(c["from_factsheet"] and "pick" in c["actions"] for c in capabilities)
    assert capabilities[-1]["limits"]["speedMax"] == 2.0
    assert not [s for s in sniffer.of("state", "agv7") if s.payload["errors"]]
    _assert_valid(sniffer)
