"""A robot's retained snapshot under a fast stream of changes (issue 19).

Two robots work sixteen PLACE leaves at a world time factor of 50, so leaves start and
finish many times a second. Each robot must publish at most one controller snapshot
per ``SNAPSHOT_EVERY_S`` however fast its leaves change (before, one went out with every
transition: at 32 robots x 500 leaves most of the bytes every robot decoded), and the
last snapshot each robot publishes must still list every leaf done: a throttled
snapshot is delayed, never lost.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import pytest

from teamtree.agents.tasktree.snapshot_publisher import SNAPSHOT_EVERY_S
from tests.conftest import run_recorded

pytestmark = pytest.mark.integration

PAIRS = 8


def _config(path: Path) -> Path:
    tree = "AND(" + ", ".join(f"THEN(o{2 * i}, o{2 * i + 1})" for i in range(PAIRS)) + ")"
    lines = [
        "[team]", 'name = "snapshot-throttle"',
        "[runtime]", "tick_hz = 20", "keepalive_s = 2",
        "[mission]", 'kind = "tasktree"', f'tree = "{tree}"', "timeout_s = 120",
    ]  # fmt: skip
    for r in range(2):
        lines += ["[[agents]]", f'id = "r{r}"', 'kind = "robot"', 'profile = "pr2"',
                  'metric = "distance"']  # fmt: skip
    lines += ["[[agents]]", 'id = "world"', 'kind = "world"', 'role = "service"',
              "time_factor = 50.0"]  # fmt: skip
    for r in range(2):
        angle = math.pi * r
        base = [0.9 * math.cos(angle), 0.9 * math.sin(angle), 0.0]
        lines += [f"[agents.robots.r{r}]", 'profile = "pr2"', f"base = {base}",
                  f"yaw = {angle + math.pi}"]  # fmt: skip
    for i in range(2 * PAIRS):
        angle = 2 * math.pi * (i * 0.618034 % 1.0)
        pos = [0.35 * math.cos(angle), 0.35 * math.sin(angle), 0.80]
        goal = [0.85 * pos[0], 0.85 * pos[1], 0.81]
        lines += [f"[agents.objects.o{i}]", 'shape = "cylinder"', "dims = [0.03, 0.10]",
                  f"position = {pos}", f"goal = {goal}"]  # fmt: skip
    for r in range(2):
        lines += ["[[agents]]", f'id = "r{r}-driver"', 'kind = "sim_driver"',
                  'role = "service"', f'robot = "r{r}"']  # fmt: skip
    lines += ["[[agents]]", 'id = "recorder"', 'kind = "recorder"', 'role = "service"',
              'path = "runs/snapshot_throttle.jsonl"']  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


def test_snapshots_are_throttled_and_the_last_one_is_current(tmp_path: Path) -> None:
    config = _config(tmp_path / "snapshot_throttle.toml")
    _, records = run_recorded(config, "snapshot_throttle.jsonl", tmp_path)
    leaves = {f"root/{i}/{j}" for i in range(PAIRS) for j in range(2)}
    done = {
        r["body"]["node"]
        for r in records
        if r["kind"] == "node.transition" and r["body"]["status"] == "done"
    }
    assert done == leaves, sorted(leaves - done)
    snapshots: dict[str, list[dict]] = defaultdict(list)
    transitions: dict[str, int] = defaultdict(int)
    for r in records:
        if r["kind"] == "node.snapshot" and not r.get("retained", False):
            snapshots[r["sender"]].append(r)
        elif r["kind"] == "node.transition":
            transitions[r["sender"]] += 1
    assert set(snapshots) == {"r0", "r1"}, sorted(snapshots)
    window_ms = SNAPSHOT_EVERY_S * 1000 - 10  # stamps are wall ms, taken a little apart
    for robot, snaps in snapshots.items():
        last = snaps[-1]["body"]
        assert set(last["done"]) == leaves, (
            f"{robot}'s last snapshot misses {sorted(leaves - set(last['done']))}"
        )
        stamps = [s["ts"] for s in snaps]
        # the mission's first and last snapshots go out at once; the rest are throttled
        crowded = [
            (a, c)
            for a, _, c in zip(stamps, stamps[1:], stamps[2:], strict=False)
            if c - a < window_ms
        ]
        assert not crowded, (
            f"{robot} published three snapshots within {window_ms:.0f} ms: {crowded} "
            f"({len(snaps)} snapshots for {transitions[robot]} transitions)"
        )
    print({r: (len(s), transitions[r]) for r, s in snapshots.items()})
