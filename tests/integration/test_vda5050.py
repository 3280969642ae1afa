"""The VDA 5050 driver against a VDA 5050 implementation nobody here wrote: vda-5050-lib's
AgvController + VirtualAgvAdapter (npm, pinned in tests/vda5050), run under Node as a
child process against mosquitto. Every message on the VDA 5050 topics is validated
against the official JSON schemas by an independent sniffer; each test asserts zero
failures."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from tests.conftest import AgentProcs, close_broker, eventually, start_broker, teamtree_cmd
from tests.vda5050_support import (
    MANUFACTURER,
    Sniffer,
    VirtualAgv,
    Watcher,
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
        tmp_path / "team.toml",
        team,
        "AND(cup, THEN(pallet1, MOVE(dock)))",
        SIM_AGENTS + agents,
        record,
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


def _two_agv_team(tmp_path: Path, team: str, **a_options) -> Path:
    agents = agv_agents("agva", "agva", loads={"pallet1": ("A", "B")}, **a_options)
    agents += agv_agents("agvb", "agvb", loads={"pallet1": ("A", "B")})
    return team_config(tmp_path / "team.toml", team, "pallet1", agents, tmp_path / "run.jsonl")


async def _wait_exit(procs: AgentProcs, *ids: str, timeout: float = 30) -> None:
    for agent_id in ids:
        proc = procs.procs[agent_id]
        await eventually(lambda p=proc: p.poll() is not None, timeout, what=f"{agent_id} exits")
        assert proc.returncode == 0, procs.log(agent_id)[-2000:]


async def test_agv_rejects_order_and_teammate_takes_node(
    mosquitto, team, tmp_path: Path, agent_procs
) -> None:
    """AGV A is told station A is a rack: the virtual AGV refuses to pick from it (its
    pick needs a floor station) and rejects the order. The behaviour fails with the
    AGV's own error text, and robot B, whose AGV comes online afterwards, takes the
    node and finishes it."""
    config = _two_agv_team(tmp_path, team, station_types={"A": "rack"})
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    agv_a = VirtualAgv("agva", mosquitto.url, tmp_path / "agva.log")
    agv_b = VirtualAgv("agvb", mosquitto.url, tmp_path / "agvb.log")
    watcher = Watcher("watcher", team=team, endpoint=mosquitto.endpoint)
    own_b = None
    async with Sniffer(mosquitto.endpoint.host, mosquitto.endpoint.port) as sniffer, watcher:
        agv_a.start()
        try:
            for agent_id in ("agva-driver", "agvb-driver", "recorder", "agva", "agvb"):
                procs.start(agent_id)
            failed = await eventually(
                lambda: watcher.bodies("behaviour.failed", "agva-driver"), 60, what="A fails"
            )
            agv_b.start()
            await eventually(lambda: watcher.done(), 60, what="the node done")
            await _wait_exit(procs, "agva", "agvb")
            own_b = await agv_b.own_state()
        finally:
            agv_b.stop()
            agv_a.stop()
    reason = failed[0]["reason"]
    assert reason.startswith("agv_rejected: orderError: order action is not executable")
    assert "invalid actionParameter" in reason
    # the AGV itself reported that text, referencing our order
    errors = [e for s in sniffer.of("state", "agva") for e in s.payload["errors"]]
    assert any(e["errorDescription"] in reason for e in errors)
    assert watcher.bodies("behaviour.finished", "agva-driver") == []
    assert len(watcher.bodies("behaviour.finished", "agvb-driver")) == 1
    assert [a for a, _ in watcher.done()] == ["agvb"]
    assert own_b["lastNodeId"] == "B" and own_b["loads"] == []
    _assert_valid(sniffer)


async def test_agv_killed_mid_order_teammate_finishes_once(
    mosquitto, team, tmp_path: Path, agent_procs
) -> None:
    """Whichever AGV takes the node is SIGKILLed while it drives: the broker publishes
    its Last Will (CONNECTIONBROKEN), the driver fails the behaviour, the robot releases
    the node, and the other robot finishes it exactly once."""
    config = _two_agv_team(tmp_path, team)
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    slow = {"timeLapse": 1, "vehicleSpeed": 0.5}  # 4 s to station A: time to kill it
    agvs = {
        name: VirtualAgv(name, mosquitto.url, tmp_path / f"{name}.log", options=slow)
        for name in ("agva", "agvb")
    }
    watcher = Watcher("watcher", team=team, endpoint=mosquitto.endpoint)
    async with Sniffer(mosquitto.endpoint.host, mosquitto.endpoint.port) as sniffer, watcher:
        for agv in agvs.values():
            agv.start()
        try:
            for agent_id in ("agva-driver", "agvb-driver", "recorder", "agva", "agvb"):
                procs.start(agent_id)
            started = await eventually(
                lambda: [s for s, k, _ in watcher.messages if k == "behaviour.started"],
                60,
                what="a behaviour started",
            )
            first = started[0].removesuffix("-driver")
            other = "agvb" if first == "agva" else "agva"
            await asyncio.sleep(1.0)
            own = await agvs[first].own_state()
            assert own["driving"] is True and own["nodeStates"], own  # mid-order
            agvs[first].kill()
            await eventually(
                lambda: watcher.bodies("behaviour.failed", f"{first}-driver"), 20, what="failed"
            )
            await eventually(lambda: watcher.done(), 60, what="the node done")
            await _wait_exit(procs, "agva", "agvb")
            own_other = await agvs[other].own_state()
        finally:
            for agv in agvs.values():
                agv.stop()
    reason = watcher.bodies("behaviour.failed", f"{first}-driver")[0]["reason"]
    assert reason.startswith("connection_broken:") and "CONNECTIONBROKEN" in reason
    wills = [s.payload["connectionState"] for s in sniffer.of("connection", first)]
    assert wills[-1] == "CONNECTIONBROKEN"
    assert watcher.bodies("behaviour.finished", f"{first}-driver") == []
    assert len(watcher.bodies("behaviour.finished", f"{other}-driver")) == 1
    assert [a for a, _ in watcher.done()] == [other]
    released = [b for b in watcher.bodies("node.transition", first) if b["status"] == "inactive"]
    assert released, "the robot whose AGV died released the node"
    assert own_other["lastNodeId"] == "B" and own_other["loads"] == []
    _assert_valid(sniffer)


@pytest.fixture
async def agv_broker():
    """A second mosquitto: the AGV's own broker, apart from the team's."""
    broker = await start_broker("mosquitto")
    try:
        yield broker
    finally:
        await close_broker(broker)


async def test_pause_resume_cancel_reach_the_agv(
    mosquitto, agv_broker, team, tmp_path: Path, agent_procs
) -> None:
    """The robot's pause, resume and cancel become startPause, stopPause and cancelOrder
    instant actions; the AGV's own state shows each, and the driver reports them. The
    AGV is on its own broker, apart from the team's; bad input on either side is
    dropped and the driver carries on."""
    agents = agv_agents("agv7", "agv7", loads={"pallet1": ("A", "B")}, agv_broker=agv_broker.url)
    config = team_config(tmp_path / "team.toml", team, "pallet1", agents, tmp_path / "run.jsonl")
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    agv = VirtualAgv("agv7", agv_broker.url, tmp_path / "agv7.log",
                     options={"timeLapse": 1, "vehicleSpeed": 0.5})  # fmt: skip
    robot = Watcher("agv7", team=team, endpoint=mosquitto.endpoint)  # stands in for the robot
    host, port = agv_broker.endpoint.host, agv_broker.endpoint.port
    team_side = Sniffer(mosquitto.endpoint.host, mosquitto.endpoint.port)
    async with Sniffer(host, port) as sniffer, team_side, robot:
        agv.start()
        try:
            procs.start("agv7-driver")

            def kinds(command_id: str) -> list[str]:
                return [k for s, k, b in robot.messages if s == "agv7-driver"
                        and k.startswith("behaviour.") and b.get("command_id") == command_id]  # fmt: skip

            await eventually(
                lambda: any(o["objects"] for o in robot.bodies("observation", "agv7-driver")),
                30,
                what="AGV online in the observations",
            )
            # bad input first: the driver drops it and carries on
            await _inject_garbage(agv_broker, "agv7")
            await robot.publish("command", "behaviour.execute", {"command_id": 7},
                                recipient="agv7-driver")  # fmt: skip
            await robot.publish("command", "behaviour.dance", {"command_id": "x"},
                                recipient="agv7-driver")  # fmt: skip
            await robot.command("agv7-driver", "behaviour.execute", command_id="c0", node="n0",
                                behaviour="WELD", params={"object": "pallet1"})  # fmt: skip
            await eventually(lambda: "behaviour.failed" in kinds("c0"), 10, what="c0 refused")
            await asyncio.sleep(1.2)  # a real state from the AGV follows the garbage
            await robot.command("agv7-driver", "behaviour.execute", command_id="c1", node="n1",
                                behaviour="PLACE", params={"object": "pallet1"})  # fmt: skip
            await eventually(lambda: "behaviour.started" in kinds("c1"), 10, what="started")
            await robot.command("agv7-driver", "behaviour.pause", command_id="c1", node="n1")
            await eventually(lambda: "behaviour.paused" in kinds("c1"), 10, what="paused")
            paused = await agv.own_state()
            assert paused["paused"] is True and paused["driving"] is False
            await asyncio.sleep(0.5)
            still = await agv.own_state()
            assert still["agvPosition"] == paused["agvPosition"]  # it does not move
            await robot.command("agv7-driver", "behaviour.resume", command_id="c1", node="n1")
            await eventually(lambda: "behaviour.resumed" in kinds("c1"), 10, what="resumed")
            assert (await agv.own_state())["paused"] is False
            await robot.command("agv7-driver", "behaviour.cancel", command_id="c1", node="n1")
            await eventually(lambda: "behaviour.failed" in kinds("c1"), 10, what="cancelled")
            cancelled = await agv.own_state()
            assert cancelled["nodeStates"] == [] and cancelled["driving"] is False
            # after a cancel the next behaviour is a new order from where the AGV stands
            await robot.command("agv7-driver", "behaviour.execute", command_id="c2", node="n2",
                                behaviour="MOVE", params={"object": "dock"})  # fmt: skip
            await eventually(lambda: "behaviour.finished" in kinds("c2"), 20, what="c2 done")
            last = await agv.own_state()
        finally:
            agv.stop()
    assert team_side.seen == []  # nothing of VDA 5050 on the team's broker
    injected = [s for s in sniffer.failures() if s.serial == "agv7"]
    assert len(injected) == 2  # exactly the two we injected; everything else is valid
    sniffer.seen = [s for s in sniffer.seen if s not in injected]
    assert kinds("c1") == [
        "behaviour.started", "behaviour.paused", "behaviour.resumed", "behaviour.failed"
    ]  # fmt: skip
    reason = next(
        b for _, k, b in robot.messages if k == "behaviour.failed" and b["command_id"] == "c1"
    )["reason"]
    assert reason.startswith("cancelled")
    sent = [a["actionType"] for s in sniffer.of("instantActions") for a in s.payload["actions"]]
    assert sent == ["factsheetRequest", "startPause", "stopPause", "cancelOrder"]
    states = [s.payload for s in sniffer.of("state", "agv7")]
    assert any(s["paused"] for s in states)
    finished = {a["actionType"]: a["actionStatus"] for s in states for a in s["actionStates"]}
    assert finished["startPause"] == finished["stopPause"] == finished["cancelOrder"] == "FINISHED"
    orders = sniffer.of("order", "agv7")
    assert len(orders) == 2 and orders[0].payload["orderId"] != orders[1].payload["orderId"]
    assert last["lastNodeId"] == "dock"
    refused = next(
        b for s, k, b in robot.messages if k == "behaviour.failed" and s == "agv7-driver"
    )
    assert refused["command_id"] == "c0" and refused["reason"].startswith("unsupported_behaviour")
    log = procs.log("agv7-driver")
    assert "VDA 5050 state" in log and "driver.agv_message_invalid" in log  # dropped, logged
    # the typed command body names the bad field in the (aggregated) drop warning
    assert "message.dropped" in log and "$.command_id" in log and "malformed" in log
    _assert_valid(sniffer)


async def _inject_garbage(broker, serial: str) -> None:
    """A non-JSON message and a schema-invalid state on the AGV's state topic."""
    import aiomqtt

    topic = f"uagv/v2/{MANUFACTURER}/{serial}/state"
    async with aiomqtt.Client(broker.endpoint.host, broker.endpoint.port) as client:
        await client.publish(topic, b"{not json", qos=1)
        await client.publish(topic, b'{"headerId": "x", "nodeStates": "abc", "errors": 5}', qos=1)


async def test_abandoned_order_is_cancelled_when_the_agv_returns(
    mosquitto, agv_broker, team, tmp_path: Path, agent_procs
) -> None:
    """The AGV's broker goes down mid-order: the driver fails the behaviour
    (connection_broken) so a teammate may take the node, while the AGV, cut off, keeps
    driving. When the broker is back and the AGV reports it still runs that order, the
    driver cancels it: the node is never worked on by two bodies."""
    agents = agv_agents("agv7", "agv7", loads={"pallet1": ("A", "B")}, agv_broker=agv_broker.url)
    config = team_config(tmp_path / "team.toml", team, "pallet1", agents, tmp_path / "run.jsonl")
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    agv = VirtualAgv("agv7", agv_broker.url, tmp_path / "agv7.log",
                     options={"timeLapse": 1, "vehicleSpeed": 0.3})  # fmt: skip
    robot = Watcher("agv7", team=team, endpoint=mosquitto.endpoint)
    async with robot:
        agv.start()
        try:
            procs.start("agv7-driver")
            await eventually(
                lambda: any(o["objects"] for o in robot.bodies("observation", "agv7-driver")),
                30,
                what="AGV online",
            )
            await robot.command("agv7-driver", "behaviour.execute", command_id="c1", node="n1",
                                behaviour="PLACE", params={"object": "pallet1"})  # fmt: skip
            await eventually(lambda: robot.bodies("behaviour.started", "agv7-driver"), 10)
            await agv_broker.stop()
            failed = await eventually(lambda: robot.bodies("behaviour.failed", "agv7-driver"), 15)
            assert failed[0]["reason"].startswith("connection_broken")
            cut_off = await agv.own_state()
            assert cut_off["nodeStates"], "the AGV still runs the order on its own"
            await agv_broker.start()
            async with Sniffer(agv_broker.endpoint.host, agv_broker.endpoint.port) as sniffer:
                await eventually(
                    lambda: any(a["actionType"] == "cancelOrder"
                                for s in sniffer.of("instantActions") for a in s.payload["actions"]),
                    30, what="cancelOrder for the abandoned order",
                )  # fmt: skip
                await eventually(
                    lambda: any(s.payload["nodeStates"] == [] and not s.payload["driving"]
                                for s in sniffer.of("state", "agv7")),
                    15, what="the AGV stopped",
                )  # fmt: skip
                own = await agv.own_state()
            _assert_valid(sniffer)
        finally:
            agv.stop()
    assert own["nodeStates"] == [] and own["driving"] is False
    assert own["orderId"] == cut_off["orderId"]  # it was that order that was cancelled
    assert robot.bodies("behaviour.finished", "agv7-driver") == []
    assert "driver.cancel_abandoned" in procs.log("agv7-driver")
