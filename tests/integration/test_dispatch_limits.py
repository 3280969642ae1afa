"""Submissions beyond the limits, to a running mission queue (its own process, on
mosquitto): ``teamtree submit`` of a bad file exits 2 naming the field and how to fix
it, and the same missions sent over the wire (past the command's checks) get a
``mission.rejected`` naming the field, never silence, and leave the queue answering."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

from teamtree.agents import Agent, RuntimeSettings
from teamtree.agents.missions.protocol import CHANNEL, LIST, REJECTED, SUBMIT, TABLE
from tests.conftest import REPO, eventually, teamtree_cmd

pytestmark = [pytest.mark.integration]

TEAM = "tea-party-queue"
DEEP = "THEN(" * 3000 + "cup" + ")" * 3000
WIDE = "AND(" + ", ".join(f"cup{i}" for i in range(20_000)) + ")"

#: name -> ([mission] table as TOML lines, the field the refusal names, words in it)
BAD_FILES = {
    "deep": (f'tree = "{DEEP}"', "mission.tree", "32 levels"),
    "nan": ('tree = "cup"\ntimeout_s = nan', "mission.timeout_s", "finite"),
    "inf": ('tree = "cup"\ntimeout_s = inf', "mission.timeout_s", "finite"),
    "twice": ('tree = "cup"\nmembers = ["pr2", "pr2"]', "mission.members", "twice"),
    "wide": (f'tree = "{WIDE}"', "mission.tree", "2048 nodes"),
    "negative": ('tree = "cup"\ntimeout_s = -5', "mission.timeout_s", "negative"),
}

#: name -> (submitted mission, the field the refusal names): past the command's checks
BAD_WIRE = {
    "deep": ({"kind": "tasktree", "tree": DEEP}, "mission.tree"),
    "deep_dict": (None, "mission.tree"),  # built below: 400 nested tables
    "nan": ({"kind": "tasktree", "tree": "cup", "timeout_s": float("nan")}, "mission.timeout_s"),
    "twice": ({"kind": "tasktree", "tree": "cup", "members": ["pr2", "pr2"]}, "mission.members"),
    "wide": ({"kind": "tasktree", "tree": WIDE}, "mission.tree"),
    "nan_param": (
        {"kind": "tasktree", "tree": {"behavior": "MOVE", "params": {"x": float("inf")}}},
        "mission.tree.params.x",
    ),
}


def _deep_dict(levels: int) -> dict:
    node: dict = {"object": "cup"}
    for _ in range(levels):
        node = {"type": "then", "children": [node]}
    return node


@pytest.fixture
async def queue(mosquitto, tmp_path: Path):
    """The tea party's mission queue alone (it checks submissions against the config;
    its robots are started per mission, and no mission here is accepted)."""
    log = (tmp_path / "queue.log").open("w")
    proc = subprocess.Popen(
        teamtree_cmd("agent", "--config", str(REPO / "configs" / "tea_party_queue.toml"),
                     "--id", "queue", "--broker", mosquitto.url, "--team", TEAM,
                     "--log-format", "json"),
        stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path,
    )  # fmt: skip
    client = Agent("limits-client", team=TEAM, endpoint=mosquitto.endpoint,
                   runtime=RuntimeSettings(request_timeout_s=20))  # fmt: skip
    try:
        async with client:
            await client.wait_connected(20)
            await eventually(lambda: client.team_view.online("mission_queue"), 120,
                             interval=0.2, what="the mission queue online")  # fmt: skip
            yield client, proc, tmp_path / "queue.log"
    finally:
        proc.terminate()
        proc.wait(20)


def _submit(tmp_path: Path, url: str, name: str, lines: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / f"{name}.toml"
    path.write_text(f'[mission]\nkind = "tasktree"\n{lines}\n')
    return subprocess.run(
        teamtree_cmd("submit", str(path), "--broker", url, "--team", TEAM, "--timeout", "20"),
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip


async def test_submit_of_a_file_beyond_the_limits_exits_2_naming_the_field(
    queue, mosquitto, tmp_path: Path
) -> None:
    client, proc, _ = queue
    for name, (lines, field, words) in BAD_FILES.items():
        out = await asyncio.to_thread(_submit, tmp_path, mosquitto.url, name, lines)
        assert out.returncode == 2, f"{name}: exit {out.returncode}\n{out.stdout}{out.stderr}"
        assert f"[{field}]" in out.stderr and words in out.stderr, f"{name}: {out.stderr}"
        assert "Traceback" not in out.stderr, out.stderr
        assert len(out.stderr) < 2000, f"{name}: a message of {len(out.stderr)} characters"
    reply = await client.request(CHANNEL, LIST, {}, timeout=20)
    assert reply.kind == TABLE and reply.body["missions"] == [], reply.body
    assert proc.poll() is None


async def test_the_queue_refuses_them_over_the_wire_naming_the_field(queue) -> None:
    client, proc, log = queue
    for name, (mission, field) in BAD_WIRE.items():
        mission = mission or {"kind": "tasktree", "tree": _deep_dict(400)}
        reply = await client.request(CHANNEL, SUBMIT, {"mission": mission}, timeout=20)
        assert reply.kind == REJECTED, f"{name}: {reply.kind} {reply.body}"
        assert reply.body["field"] == field, f"{name}: {reply.body}"
        print(f"{name}: {reply.body['error'][:160]}")
    reply = await client.request(CHANNEL, LIST, {}, timeout=20)  # still answering
    assert reply.kind == TABLE and reply.body["missions"] == [], reply.body
    assert proc.poll() is None
    errors = [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{")]
    assert not [e for e in errors if e.get("event") == "handler.failed"], errors[-5:]


@pytest.mark.parametrize(
    ("mission", "key", "words"),
    [
        (f'tree = "{DEEP}"\ntimeout_s = 60', "mission.tree", "32 levels"),
        (f'tree = "{WIDE}"\ntimeout_s = 60', "mission.tree", "2048 nodes"),
        ('tree = "cup"\ntimeout_s = nan', "mission.timeout_s", "finite"),
    ],
    ids=["deep", "wide", "nan"],
)
def test_run_of_a_config_beyond_the_limits_exits_2_naming_the_key(
    tmp_path: Path, mission: str, key: str, words: str
) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(
        f'[team]\nname = "runbad"\nbroker_kind = "embedded"\n\n[mission]\nkind = "tasktree"\n'
        f'{mission}\n\n[[agents]]\nid = "pr2"\nkind = "robot"\nprofile = "pr2"\n'
    )
    out = subprocess.run(teamtree_cmd("run", str(config)), capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)  # fmt: skip
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"[{key}]" in out.stderr and words in out.stderr, out.stderr
    assert len(out.stderr) < 2000, f"a message of {len(out.stderr)} characters"
