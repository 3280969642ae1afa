"""The liveness gap of issue 14: a behaviour that ended at the body while its end
(the driver's non-retained ``behaviour.failed`` / ``.finished``) never reached the
robot, e.g. published while the robot had not yet re-subscribed to a restarted broker.
Before ``BodyWatch`` the robot held such a node forever and the team stalled with no
error; now the driver's observations (``robot.busy``) end it."""

from __future__ import annotations

import asyncio

import structlog
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.tasktree.params import RobotParams
from teamtree.agents.tasktree.robot import RobotAgent
from teamtree.broker import Endpoint
from teamtree.planners.tasktree import BodyWatch, TaskController, Tick
from tests.robot_in_process import TEAM, TREE, observation, robot_holding_a_leaf


async def _robot_holding_a_leaf() -> tuple[RobotAgent, str, str]:
    return await robot_holding_a_leaf(body_watch=BodyWatch(grace_s=0.05, start_s=0.3))


def test_a_lost_end_of_behaviour_gives_the_node_back() -> None:
    """The body ran the command and went idle; no progress message came."""

    async def run() -> RobotAgent:
        robot, node, command_id = await _robot_holding_a_leaf()
        await robot.receiver.receive(observation(command_id, 1))
        await robot.receiver.receive(observation(None, 2))
        assert robot.controller.my_working == node  # within the grace: may still come
        await asyncio.sleep(0.1)
        await robot.receiver.receive(observation(None, 3))
        return robot

    robot = asyncio.run(run())
    c = robot.controller
    assert c is not None and c.my_working is None and "root/0" not in c.working
    assert robot.executed[-1] == {"node": "root/0", "ok": False, "reason": "progress_lost"}


def test_an_execute_never_seen_on_the_body_fails_after_start_s() -> None:
    async def run() -> RobotAgent:
        robot, node, _ = await _robot_holding_a_leaf()
        await robot.receiver.receive(observation(None, 1))
        assert robot.controller.my_working == node
        await asyncio.sleep(0.35)
        await robot.receiver.receive(observation(None, 2))
        return robot

    robot = asyncio.run(run())
    assert robot.controller is not None and robot.controller.my_working is None


def test_a_running_body_is_never_given_up() -> None:
    async def run() -> RobotAgent:
        robot, _, command_id = await _robot_holding_a_leaf()
        for hid in range(1, 6):
            await robot.receiver.receive(observation(command_id, hid))
            await asyncio.sleep(0.1)
        return robot

    robot = asyncio.run(run())
    assert robot.controller is not None and robot.controller.my_working == "root/0"


# -- the pure rule, property-tested ---------------------------------------------------

steps = st.lists(
    st.tuples(st.floats(0.0, 2.0), st.sampled_from(["c1", "other", None]), st.booleans()),
    max_size=40,
)


@given(steps, st.floats(0.1, 2.0), st.floats(0.5, 8.0))
@settings(max_examples=300, deadline=None)
def test_body_watch_reports_exactly_the_commands_that_ended_unheard(
    seq: list[tuple[float, str | None, bool]], grace: float, start: float
) -> None:
    """Against a direct model: lost once the body was seen running the command and has
    not for ``grace``, or never seen and ``start`` passed; never while it runs it,
    never a node no longer held, each at most once."""
    watch = BodyWatch(grace_s=grace, start_s=start)
    watch.sent("n", "c1", 0.0)
    now, seen, idle_since, reported, held = 0.0, False, None, False, True
    for dt, busy, keep in seq:
        now += dt
        held = held and keep
        lost = watch.observe(busy, {"n"} if held else set(), now)
        expect = False
        if held and not reported:
            if busy == "c1":
                seen, idle_since = True, None
            elif seen:
                idle_since = now if idle_since is None else idle_since
                expect = now - idle_since >= grace
            else:
                expect = now >= start
        assert lost == (["n"] if expect else []), (seq, grace, start)
        reported = reported or expect
        if busy == "c1":
            assert lost == []
    if not held or reported:
        assert watch.watched == frozenset()


def test_forgotten_and_replaced_commands() -> None:
    watch = BodyWatch(grace_s=1.0, start_s=5.0)
    watch.sent("n", "c1", 0.0)
    watch.observe("c1", {"n"}, 0.5)
    watch.sent("n", "c2", 1.0)  # a new execute for the same node starts afresh
    assert watch.observe("c1", {"n"}, 1.5) == []
    assert watch.observe(None, {"n"}, 5.9) == []
    assert watch.observe(None, {"n"}, 6.0) == ["n"]
    watch.sent("m", "c3", 0.0)
    watch.forget("m")
    assert watch.observe(None, {"m"}, 100.0) == []


def test_a_team_that_stands_still_ends_with_an_error_naming_the_open_leaves() -> None:
    """Nobody can take the open leaves (here: potential 0 for this robot, no peer):
    after ``stall_timeout_s`` the robot fails its mission (exit 2) instead of waiting."""

    async def run() -> tuple[RobotAgent, list[dict]]:
        robot = RobotAgent(
            "pr2", team=TEAM, endpoint=Endpoint("127.0.0.1", 1), tree=TREE,
            params=RobotParams(profile="pr2", driver="pr2-driver", stall_timeout_s=0.1),
        )  # fmt: skip
        await robot.setup()
        robot.controller = TaskController(TREE, "pr2", default_potential=0.0)
        with structlog.testing.capture_logs() as logs:
            for _ in range(3):
                await robot.feed(Tick())
                robot.stall.check()
            assert robot.exit_code == 0  # not yet: it may be a pause
            await asyncio.sleep(0.15)
            robot.stall.check()
            robot.stall.check()  # the ticks until it stops say it no more
        return robot, logs

    robot, logs = asyncio.run(run())
    assert robot.exit_code == 2
    failed = [r for r in logs if r["event"] == "mission.failed"]
    assert len(failed) == 1 and "PLACE(cup)" in failed[0]["reason"], failed


def test_a_busy_team_is_never_a_stall() -> None:
    async def run() -> RobotAgent:
        robot, _, _ = await _robot_holding_a_leaf()
        robot.stall_timeout_s = 0.05
        for _ in range(3):
            robot.stall.check()
            await asyncio.sleep(0.05)
        return robot

    assert asyncio.run(run()).exit_code == 0
