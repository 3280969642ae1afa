"""``teamtree foxglove``: viewers built on @foxglove/ws-protocol (tests/foxglove) watch a
tea party live. The world scene and the tree decode and change as the mission
advances; a viewer killed mid-stream leaves the server serving the others; a viewer's
attempt to publish is refused and nothing reaches the team."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from teamtree.agents.observers.live_view import SCENE_SCHEMA, TREE_SCHEMA
from teamtree.agents.observers.record_channels import LOG_SCHEMA
from tests.conftest import REPO, assert_observer_kept_out, eventually, teamtree_cmd

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TEAM = "tea-party-s1"  # configs/tea_party_s1.toml's
WATCH = REPO / "tests" / "foxglove" / "watch_live.mjs"


def _need_node() -> None:
    if shutil.which("node") is None:
        pytest.skip("Node is not installed (apt-get install nodejs npm; tests/run.sh does)")
    if not (REPO / "tests" / "foxglove" / "node_modules" / "@foxglove" / "ws-protocol").is_dir():
        pytest.fail("@foxglove/ws-protocol is not installed: `npm ci` in tests/foxglove")


def _events(path: Path) -> list[dict]:
    text = path.read_text()
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines()]


def _messages(path: Path, topic: str) -> list[dict]:
    return [e["data"] for e in _events(path) if e["event"] == "message" and e["topic"] == topic]


def _viewer(port: int, out: Path, *args: str) -> subprocess.Popen:
    with out.open("wb") as stdout:
        return subprocess.Popen(
            ["node", str(WATCH), f"ws://127.0.0.1:{port}", *args],
            stdout=stdout, stderr=subprocess.STDOUT,
        )  # fmt: skip


async def test_viewers_watch_a_tea_party_live(mosquitto, tmp_path: Path) -> None:
    _need_node()
    served = tmp_path / "server.out"
    with served.open("wb") as stdout:
        server = subprocess.Popen(
            teamtree_cmd("foxglove", "--broker", mosquitto.url, "--team", TEAM, "--port", "0"),
            stdout=stdout, stderr=subprocess.STDOUT, cwd=tmp_path,
        )  # fmt: skip
    viewers: list[subprocess.Popen] = []
    try:
        found = await eventually(
            lambda: re.search(r"ws://127\.0\.0\.1:(\d+)", served.read_text()), 60,
            what="the server's address",
        )  # fmt: skip
        port = int(found[1])
        watcher, dropped = tmp_path / "watcher.out", tmp_path / "dropped.out"
        viewers.append(_viewer(port, watcher, "/scene", "/tree", "/log", "/pr2/state/*",
                               "--publish", f"teamtree/v1/{TEAM}/_/mission"))  # fmt: skip
        viewers.append(_viewer(port, dropped, "/tree", "/team"))
        # the second viewer dies mid-stream, without closing its connection
        await eventually(lambda: _messages(dropped, "/tree"), 60, what="the viewer's first tree")
        viewers[1].send_signal(signal.SIGKILL)
        viewers[1].wait(10)
        await eventually(
            lambda: any(e["event"] == "status" for e in _events(watcher)), 60,
            what="the server's answer to the viewer's publish",
        )  # fmt: skip
        run = subprocess.run(
            teamtree_cmd("run", str(REPO / "configs" / "tea_party_s1.toml"), "--broker", mosquitto.url),
            capture_output=True, text=True, timeout=240, cwd=tmp_path,
        )  # fmt: skip
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
        await eventually(
            lambda: any(t["state"] == "succeeded" for t in _messages(watcher, "/tree")), 60,
            what="the tree of the succeeded mission",
        )  # fmt: skip
        assert server.poll() is None, served.read_text()
    finally:
        for viewer in viewers:
            if viewer.poll() is None:
                viewer.terminate()
                viewer.wait(10)
        server.send_signal(signal.SIGINT)
        server.wait(30)
    assert server.returncode == 0, served.read_text()
    assert re.search(r"served \d+ messages", served.read_text())

    events = _events(watcher)
    info = next(e for e in events if e["event"] == "serverInfo")
    assert "clientPublish" not in info["capabilities"]
    # the tree: valid, and it moves on with the mission until every leaf it needs is done
    trees = [t for t in _messages(watcher, "/tree") if t["total"]]
    for tree in trees:
        jsonschema.validate(tree, TREE_SCHEMA)
    done = [t["done"] for t in trees]
    assert done == sorted(done) and len(set(done)) >= 3, done
    final = trees[-1]
    assert final["state"] == "succeeded"
    assert {leaf["agent"] for leaf in final["leaves"] if leaf["state"] == "done"} == {
        "pr2",
        "baxter",
    }
    # the world: valid scenes in which objects move to their goals
    scenes = _messages(watcher, "/scene")
    for scene in scenes:
        jsonschema.validate(scene, SCENE_SCHEMA)
    ids = {e["id"] for e in scenes[-1]["entities"]}
    assert {"robot/pr2", "robot/baxter", "object/cup", "goal/cup"} <= ids

    def cup(scene: dict) -> dict:
        entity = next(e for e in scene["entities"] if e["id"] == "object/cup")
        return entity["cylinders"][0]["pose"]["position"]

    assert cup(scenes[0]) != cup(scenes[-1]), "the cup never moved"
    # the raw messages, decoded, and the team's log lines
    transitions = _messages(watcher, "/pr2/state/node.transition")
    assert {t["body"]["status"] for t in transitions} >= {"working", "done"}
    lines = _messages(watcher, "/log")
    for line in lines:
        jsonschema.validate(line, LOG_SCHEMA)
    assert any(re.match(r"(pr2|baxter) finished PLACE\(", line["message"]) for line in lines)
    # the viewer's attempt to publish was refused, and nothing of it reached the team
    statuses = [e["message"] for e in events if e["event"] == "status"]
    assert any("clientPublish" in s for s in statuses), statuses
    recorded = [
        json.loads(line)
        for line in (tmp_path / "runs" / "tea_party_s1.jsonl").read_text().splitlines()
    ]
    assert not [r for r in recorded if r["sender"] == "viewer" or r["kind"] == "mission.cancel"]
    assert_observer_kept_out(recorded, "foxglove", TEAM)


def test_without_foxglove_sdk_the_command_says_how_to_install_it(mosquitto) -> None:
    script = (
        "import sys; sys.modules['foxglove'] = None\n"  # as if foxglove-sdk were not installed
        "from teamtree.agents.cli.app import main\n"
        f"sys.exit(main(['foxglove', '--broker', {mosquitto.url!r}, '--team', 't']))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert "pip install 'teamtree[foxglove]'" in out.stderr
