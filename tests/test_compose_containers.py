"""compose.yaml in real containers (podman + podman-compose; marker ``containers``):
the tea party runs to completion across containers, survives losing the Baxter's
container, takes a third robot attached by ``compose run``, keeps anonymous and
forging clients out, and a second ``up`` runs a fresh mission.

Images are built without a registry (tests/container_images.py) and cached between
runs; a cold build takes minutes (progress lines go to pytest's terminal). Skipped,
with the reason, when podman cannot run containers here.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.compose_stack import TEAM, Stack, last_presence
from tests.conftest import REPO
from tests.container_images import (
    Images,
    build_base,
    build_images,
    podman_problem,
    progress,
    run_problem,
)
from tests.mission_record import (
    NO_ROBOT,
    assert_each_leaf_done_once,
    done_by,
    executions,
    leaves_of,
    placed_but_not_counted,
)
from tests.ops_support import ops_cmd
from tests.progress_support import report_to_terminal

pytestmark = [pytest.mark.containers, pytest.mark.timeout(1500)]

MISSION_S = 300  # the recorder's own limit is TEAMTREE_MISSION_TIMEOUT=300
KILL_MISSION_S = 240  # the robots may start late on a loaded machine; takeover is quick


@pytest.fixture(scope="module")
def images(pytestconfig: pytest.Config) -> Images:
    report_to_terminal(pytestconfig)  # progress in the log, uncaptured
    problem = podman_problem()
    if problem:
        pytest.skip(f"podman cannot run containers here: {problem}")
    t0 = time.monotonic()
    problem = run_problem(build_base())
    if problem:
        pytest.skip(f"podman cannot run containers here: {problem}")
    built = build_images()
    progress(f"images ready in {time.monotonic() - t0:.0f} s: {built}")
    return built


def working(records: list[dict[str, Any]], agent: str | None = None) -> list[str]:
    """Leaves some agent (or `agent`) has started working on, in order."""
    return [
        str(r["body"].get("node"))
        for r in records
        if r["kind"] == "node.transition"
        and isinstance(r["body"], dict)
        and r["body"].get("status") == "working"
        and (agent is None or r["body"].get("agent", r["sender"]) == agent)
    ]


def online(records: list[dict[str, Any]]) -> set[str]:
    """Agents whose latest presence in the record is ONLINE."""
    return {a for a, s in last_presence(records).items() if s == "ONLINE"}


def finish(stack: Stack) -> list[dict[str, Any]]:
    """Wait for the recorder's outcome; it must be 0 (every leaf done)."""
    t0 = time.monotonic()
    code = stack.wait_exit("recorder", MISSION_S + 60)
    progress(f"{stack.project}: recorder exited {code} after {time.monotonic() - t0:.0f} s more")
    assert code == 0, f"the mission did not finish:\n{stack.diagnose()}"
    return stack.record()


# -- compose up: the whole mission, the broker's rules, a second up -------------------


@pytest.fixture(scope="module")
def first_run(images: Images) -> Iterator[tuple[Stack, dict[str, Any]]]:
    """One `up`, its mission to the end, the broker's rules probed meanwhile; then
    `down` without -v, so the broker's retained state stays for the second `up`."""
    stack = Stack(images)
    seen: dict[str, Any] = {}
    try:
        t0 = time.monotonic()
        stack.up()
        seen["anonymous"] = probe_anonymous(stack)
        seen["forgery"] = probe_forgery(stack)
        seen["host_view"] = monitor_from_host(
            stack, frozenset({"world", "allocator-1", "allocator-2"})
        )
        seen["records"] = finish(stack)
        seen["web"] = web_from_host(stack)
        seen["mission_s"] = time.monotonic() - t0
        # members leave once done, after their last messages reach the broker (a
        # member's close waits up to 4 s for them): give them that, bounded, before
        # reading their containers' states (a CI run read one still stopping)
        for member in ("pr2", "baxter", "human"):
            with contextlib.suppress(subprocess.TimeoutExpired):
                stack.wait_exit(member, 30)
        seen["states"] = {
            s: subprocess.run(
                ["podman", "inspect", "--format", "{{.State.Status}}", c],
                capture_output=True, text=True,
            ).stdout.strip()
            for s, c in stack.containers().items()
        }  # fmt: skip
        stack.down(volumes=False)
        yield stack, seen
    finally:
        stack.down(volumes=True)


def probe_anonymous(stack: Stack) -> subprocess.CompletedProcess[str]:
    """An anonymous subscriber inside the compose network."""
    return stack.compose(
        "run", "--rm", "--no-deps", "recorder",
        "mosquitto_sub", "-h", "mosquitto", "-p", "1883", "-t", "#", "-C", "1", "-W", "5",
        check=False, timeout=120,
    )  # fmt: skip


FORGE = """
set -u
C=/run/teamtree/credentials
# the subscriber retries a failed connect (a CI run's lookup of `mosquitto` failed once
# inside the podman network); the publisher repeats both messages while it listens, so
# a subscriber that is slow to subscribe on a loaded machine still hears them
( for try in 1 2 3; do
    mosquitto_sub -h mosquitto -u monitor -P "$(cat $C/monitor)" -v -W 20 -C 2 \
      -t 'teamtree/v1/{team}/+/forged' && break
    sleep 1
  done ) > /tmp/heard 2>&1 &
SUB=$!
n=0
while kill -0 $SUB 2>/dev/null && [ $n -lt 120 ]; do
  mosquitto_pub -h mosquitto -u pr2 -P "$(cat $C/pr2)" -q 1 -t 'teamtree/v1/{team}/baxter/forged' -m as-baxter
  mosquitto_pub -h mosquitto -u pr2 -P "$(cat $C/pr2)" -q 1 -t 'teamtree/v1/{team}/pr2/forged' -m as-pr2
  sleep 0.5
  n=$((n+1))
done
wait
cat /tmp/heard
"""


def probe_forgery(stack: Stack) -> str:
    """The PR2's credentials publishing on the Baxter's topics and on its own, inside
    the compose network; a read-only observer reports what the broker let through."""
    proc = stack.compose(
        "run", "--rm", "--no-deps", "recorder", "sh", "-c", FORGE.format(team=TEAM),
        check=False, timeout=120,
    )  # fmt: skip
    return proc.stdout + proc.stderr


def monitor_from_host(
    stack: Stack, expect: frozenset[str] = frozenset({"world"})
) -> dict[str, Any]:
    """`teamtree monitor --once --json` from the host, on the published port, until the
    view shows `expect` online (the world may still be starting on a loaded machine)
    or two minutes passed; the last view."""
    env = {"TEAMTREE_PASSWORD_MONITOR": stack.password("monitor")}
    deadline = time.monotonic() + 120
    while True:
        proc = subprocess.run(
            ops_cmd("monitor", "--broker", f"mqtt://127.0.0.1:{stack.mqtt_port}", "--team", TEAM,
                    "--once", "--json", "--wait", "2"),
            capture_output=True, text=True, timeout=60, env={**stack.env, **env},
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        view = json.loads(proc.stdout)
        if expect <= set(view["online"]) or time.monotonic() > deadline:
            return view
        time.sleep(2.0)


def web_from_host(stack: Stack, timeout: float = 60.0) -> dict[str, Any]:
    """The web view's team page and snapshot from the host, on the published WEB_PORT."""
    url = f"http://127.0.0.1:{stack.web_port}/"
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as reply:
                page = reply.read().decode()
            with urllib.request.urlopen(url + "api/state", timeout=5) as reply:
                return {"page": page, "state": json.loads(reply.read())}
        except (OSError, ValueError):
            if time.monotonic() > deadline:
                raise AssertionError(f"no web view at {url}:\n{stack.logs('web')}") from None
            time.sleep(1.0)


def test_compose_up_runs_the_tea_party_across_containers(first_run: Any) -> None:
    _, seen = first_run
    records = seen["records"]
    who = assert_each_leaf_done_once(records)
    progress(f"mission in {seen['mission_s']:.0f} s from up; done by {who}")
    assert set(who) == {"PLACE(burger)", "PLACE(cup)", "PLACE(tea_pot)", "PLACE(sugar)"}
    assert max(executions(records).values()) == 1, executions(records)
    # the robots reached the world through the compose network (the driver's factsheet)
    sheets = [r for r in records if r["kind"] == "factsheet" and r["sender"] == "pr2-driver"]
    assert any(r["body"].get("world") == "tcp://world:5555" for r in sheets), sheets[-1:]
    # observers never appear as members; the members left when they were done
    senders = {r["sender"] for r in records}
    assert not {s for s in senders if s.startswith(("viewer", "monitor", "recorder"))}
    for member in ("pr2", "baxter", "human"):
        # podman says "stopped" for a container whose process ended until its cleanup
        # has run, then "exited" (a CI run read "stopped" right after ``podman wait``)
        assert seen["states"][member] in ("exited", "stopped"), seen["states"]
    # the host sees the team on the published port (MQTT_PORT), as the monitor user
    view = seen["host_view"]
    assert {"world", "allocator-1", "allocator-2"} <= set(view["online"]), view["online"]
    assert not {"monitor", "recorder"} & set(view["agents"])
    # the web view answers from the host (WEB_PORT), read as the monitor user, no member
    web = seen["web"]
    assert "<title>teamtree" in web["page"]
    state = web["state"]
    assert state["mission"]["complete"] and {"pr2", "baxter", "world"} <= set(state["agents"])
    assert not {a for a in state["agents"] if a.startswith("web")}, state["agents"]
    assert state["broker"].get("version", "").startswith("mosquitto"), "reads $SYS as monitor"


def test_broker_refuses_anonymous_and_forged_topics_in_the_compose_network(
    first_run: Any,
) -> None:
    _, seen = first_run
    anon = seen["anonymous"]
    assert anon.returncode != 0, f"an anonymous client read the broker: {anon.stdout}"
    assert "not authori" in (anon.stdout + anon.stderr).lower(), anon.stdout + anon.stderr
    heard = seen["forgery"]
    assert f"teamtree/v1/{TEAM}/pr2/forged as-pr2" in heard, heard  # its own: allowed
    assert "as-baxter" not in heard, f"pr2 wrote the Baxter's topics: {heard}"


def test_down_and_up_again_runs_a_fresh_mission(first_run: Any) -> None:
    stack, seen = first_run
    first = seen["records"]
    stack.up()  # same project: the broker's data volume holds the first mission's state
    records = finish(stack)
    assert records != first
    # the broker did keep the first mission's state (else this proves nothing) ...
    stale = [
        r for r in records
        if r.get("retained") and r["kind"] == "node.snapshot" and r["body"].get("done")
    ]  # fmt: skip
    assert stale, "no retained snapshot of the first mission reached the second"
    # ... and yet the second mission ran: every leaf done once, in this mission
    assert_each_leaf_done_once(records)
    # every leaf was worked on again in this mission, not taken as done from the
    # retained snapshots of the first
    redone = set(working(records))
    leaves = set(leaves_of(records))
    human = {n for n, agents in done_by(records).items() if agents == [NO_ROBOT]}
    assert leaves - human <= redone, f"not executed again: {leaves - human - redone}"


# -- losing a robot's container mid-mission ---------------------------------------------


def test_killing_the_baxter_container_mid_mission_pr2_finishes_its_node_once(
    images: Images, tmp_path: Path
) -> None:
    image, config = variant_image(
        images, tmp_path, "compose_tea_party_both", [*BOTH_ROBOTS, *PR2_CAN_TAKE_OVER]
    )
    stack = Stack(images, image=image, config=config, mission_timeout_s=KILL_MISSION_S)
    try:
        stack.up()
        records = stack.wait_record(
            lambda rs: working(rs, "baxter"), MISSION_S, "the Baxter working on a leaf"
        )
        node = working(records, "baxter")[0]
        done_before = done_by(records).get(node, [])
        if done_before:  # a timing race: the scenario did not happen, nothing to judge
            pytest.xfail(f"{node} was done before the kill could happen: {done_before}")
        removed_ms = time.time() * 1000
        stack.remove("baxter")
        progress(f"{stack.project}: removed the Baxter's container while it worked on {node}")
        code = stack.wait_exit("recorder", KILL_MISSION_S + 60)
        records = stack.record()
        if code != 0 and (stuck := placed_but_not_counted(records)):
            # Seen once in four runs: the human placed the cup while the PR2 was still
            # waiting on the Baxter's broken connection, and the PR2 never counted it
            # done. A robot-side theory-of-mind gap, not compose's: recorded, not hidden.
            pytest.xfail(f"{stuck} at the goal in the world but never counted done")
        # Safety is judged whatever happened: no leaf done by two agents.
        done = done_by(records)
        twice = {leaf: agents for leaf, agents in done.items() if len(set(agents)) > 1}
        assert not twice, f"leaves done by more than one agent: {twice}"
        assert code == 0, f"the mission did not complete after the kill (done: {sorted(done)})"
        assert_each_leaf_done_once(records)
        after = done_by(records)[node]
        if after == ["baxter"]:
            # The Baxter's own DONE: legitimate only if it left before the container was
            # removed (`podman rm` takes a moment); then the kill came too late to test.
            ts = [r["ts"] for r in records if r["kind"] == "node.transition"
                  and r["sender"] == "baxter" and r["body"].get("node") == node
                  and r["body"].get("status") == "done"]  # fmt: skip
            assert ts and ts[0] <= removed_ms + 2000, (ts, removed_ms)
            pytest.xfail(f"the Baxter finished {node} before its container was removed")
        assert len(after) == 1 and after[0] != "baxter", after
        if after[0] != NO_ROBOT:  # a robot took it over (the human may have, too)
            assert executions(records)[(after[0], node)] == 1, executions(records)
        progress(f"{stack.project}: the Baxter's {node} was finished by {after[0]}")
    finally:
        stack.down(volumes=True)


# -- a third robot attached with `compose run` ----------------------------------------

THIRD = """
[[agents]]
id = "robot3"
kind = "robot"
profile = "pr2"
driver = "robot3-driver"
metric = "distance+grasp"
seed = 4

[[agents]]
id = "robot3-driver"
kind = "sim_driver"
role = "service"
robot = "robot3"
"""


def variant_image(
    images: Images, workdir: Path, name: str, replacements: list[tuple[str, str]], extra: str = ""
) -> tuple[str, str]:
    """The teamtree image plus a variant of the compose config (`name`, the shipped
    one with `replacements` and `extra` appended), as a user would add their own team
    config; returns (image, config path inside it)."""
    text = (REPO / "configs" / "compose_tea_party.toml").read_text()
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new, 1)
    (workdir / f"{name}.toml").write_text(text + extra)
    (workdir / "Containerfile").write_text(
        f"FROM {images.teamtree}\nCOPY {name}.toml /app/configs/\n"
    )
    ref = f"localhost/teamtree:test-{name.replace('_', '-')}"
    subprocess.run(["podman", "build", "-q", "-t", ref, str(workdir)], check=True,
                   capture_output=True)  # fmt: skip
    return ref, f"configs/{name}.toml"


#: podman before 4.6 ignores `service_healthy`, so on a loaded machine one robot can
#: start well after the other, past its 10 s wait for the config's other robots, and
#: do every leaf alone (seen once, load average 25 on 2 cores). Tests that need both
#: robots in the mission let them wait for each other (up to 4 min).
BOTH_ROBOTS = [
    ("seed = 1\n", "seed = 1\nstart_timeout_s = 240.0\n"),
    ("seed = 2\n", "seed = 2\nstart_timeout_s = 240.0\n"),
]

PR2_CAN_TAKE_OVER = [("dims = [0.045, 0.07]", "dims = [0.040, 0.07]")]
"""The burger 8 cm wide instead of 9: the Baxter's first leaf is nearly always the
burger, and at 9 cm the PR2's 9 cm gripper scores it below ``min_grasp`` (0.6-0.9 of
100), so after the Baxter's removal nobody could place it and the team stood still (the
stall this test saw; robots now end such a mission with ``stall_timeout_s``'s error).
At 8 cm the PR2 scores it 4-6 and can take it over."""


def three_robot_image(images: Images, workdir: Path) -> tuple[str, str]:
    """A config naming a third robot (a PR2 at the table's -x end, in the world and
    the ACL) that compose does not start: it joins only by `compose run ... attach`.
    The first two wait for it before they start the mission, and every leaf is in one
    AND, so the third has work to take: with the human taking two of the four leaves,
    a robot attached after the start often found none left (seen once in three runs)."""
    replacements = [
        ('tree = "THEN(AND(burger, cup), AND(tea_pot, sugar))"',
         'tree = "AND(burger, cup, tea_pot, sugar)"'),
        *BOTH_ROBOTS,
        ("[agents.robots.baxter]",
         '[agents.robots.robot3]\nprofile = "pr2"\nbase = [-0.65, 0.0, 0.0]\nyaw = 0.0\n\n'
         "[agents.robots.baxter]"),
    ]  # fmt: skip
    return variant_image(images, workdir, "compose_tea_party_3", replacements, THIRD)


def test_a_third_robot_attached_by_compose_run_takes_part(images: Images, tmp_path: Path) -> None:
    image, config = three_robot_image(images, tmp_path)
    stack = Stack(images, image=image, config=config)
    attach = None
    try:
        stack.up()
        stack.wait_record(
            lambda rs: {"pr2", "baxter"} <= online(rs), MISSION_S, "the robots ONLINE"
        )
        assert not working(stack.record()), "the robots started without the third"
        broker = "mqtt://mosquitto:1883"
        stack.compose(
            "run", "-d", "--rm", "--no-deps", "--name", f"{stack.project}_robot3-driver",
            "pr2", "teamtree", "agent", "--config", config, "--id", "robot3-driver",
            "--broker", broker,
            timeout=120,
        )  # fmt: skip
        attach = subprocess.Popen(
            [*stack_cmd(stack), "run", "--rm", "--no-deps", "--name",
             f"{stack.project}_robot3", "pr2", "teamtree", "attach", "--config", config,
             "--id", "robot3", "--broker", broker, "--wait", "5"],
            env=stack.env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        progress(f"{stack.project}: attaching robot3 by compose run")
        records = finish(stack)
        out, _ = attach.communicate(timeout=120)
        progress(f"{stack.project}: robot3 exited {attach.returncode}")
        assert attach.returncode == 0, out[-3000:]
        who = assert_each_leaf_done_once(records)
        assert "robot3" in who.values(), f"robot3 did no leaf: {who}\n{out[-2000:]}"
        assert max(executions(records).values()) == 1, executions(records)
    finally:
        if attach is not None and attach.poll() is None:
            attach.kill()
        for name in (f"{stack.project}_robot3", f"{stack.project}_robot3-driver"):
            subprocess.run(["podman", "rm", "-f", "-t", "0", name], capture_output=True)
        stack.down(volumes=True)


def stack_cmd(stack: Stack) -> list[str]:
    from tests.compose_stack import podman_compose

    return [*podman_compose(), "-p", stack.project, "-f", str(REPO / "compose.yaml")]
