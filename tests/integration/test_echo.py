"""``teamtree echo``: a tea party's every message kind printed live as valid JSON, a
malformed message reported and passed over, and bad filters refused before anything
connects."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import paho.mqtt.publish as mqtt_publish
import pytest

from tests.conftest import REPO, assert_observer_kept_out, eventually, teamtree_cmd

pytestmark = pytest.mark.integration

TEAM = "tea-party-s1"  # configs/tea_party_s1.toml's


def _strict(text: str) -> dict:
    """`text` as JSON by RFC 8259 (NaN and Infinity are not JSON)."""

    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    value = json.loads(text, parse_constant=refuse)
    assert isinstance(value, dict)
    return value


async def test_echo_prints_every_kind_of_a_tea_party_as_json(mosquitto, tmp_path: Path) -> None:
    out, err = tmp_path / "echo.out", tmp_path / "echo.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        echo = subprocess.Popen(
            teamtree_cmd("echo", "--broker", mosquitto.url, "--team", TEAM),
            stdout=stdout, stderr=stderr, cwd=tmp_path,
        )  # fmt: skip
    try:
        await eventually(lambda: "echoing team" in err.read_text(), 30, what="echo connected")
        garbage = f"teamtree/v1/{TEAM}/intruder/state"
        mqtt_publish.single(garbage, b"\xc1 not msgpack", hostname="127.0.0.1",
                            port=mosquitto.endpoint.port)  # fmt: skip
        run = subprocess.run(
            teamtree_cmd("run", str(REPO / "configs" / "tea_party_s1.toml"),
                         "--broker", mosquitto.url),
            capture_output=True, text=True, timeout=240, cwd=tmp_path,
        )  # fmt: skip
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
        recorded = [
            json.loads(line)
            for line in (tmp_path / "runs" / "tea_party_s1.jsonl").read_text().splitlines()
        ]
        kinds = {r["kind"] for r in recorded}
        assert {"node.claim", "node.transition", "observation", "mission.status"} <= kinds

        def echoed() -> list[dict]:
            text = out.read_text()
            return [_strict(line) for line in text[: text.rfind("\n") + 1].splitlines()]

        await eventually(lambda: kinds <= {e["kind"] for e in echoed()}, 30,
                         what="every recorded kind echoed")  # fmt: skip
        assert echo.poll() is None, "echo died"
    finally:
        echo.send_signal(signal.SIGINT)
        echo.wait(20)
    lines = echoed()
    assert echo.returncode == 0
    for line in lines:
        assert {"topic", "kind", "sender", "ts", "hlc", "body"} <= set(line), line
        assert line["topic"].startswith(f"teamtree/v1/{TEAM}/")
    # the same decoding as the recorder: every recorded message is echoed as recorded
    echoed_keys = {(e["topic"], e["kind"], e["ts"], json.dumps(e["body"])) for e in lines}
    for rec in recorded:
        key = (rec["topic"], rec["kind"], rec["ts"], json.dumps(rec["body"]))
        assert key in echoed_keys, rec
    assert f"dropped a malformed message on {garbage}" in err.read_text()
    assert_observer_kept_out(recorded, "echo", TEAM)


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        (
            "--kind",
            "node.clam",
            "'node.clam' is no kind of message teamtree sends; did you mean node.claim",
        ),
        ("--kind", "robot.*", "'robot.*' is no kind of message teamtree sends"),
        ("--topic", "pr+/state", "'pr+/state': '+' must be a whole segment"),
        ("--topic", "#/state", "'#/state': '#' must be a whole last segment"),
        ("--agent", "pr 2", "invalid agent id 'pr 2'"),
    ],
)
def test_echo_refuses_a_filter_that_can_match_nothing(flag: str, value: str, says: str) -> None:
    # no broker runs at this address: the filter is refused before anything connects
    out = subprocess.run(
        teamtree_cmd("echo", "--broker", "mqtt://127.0.0.1:9", "--team", "t", flag, value),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert f"argument {flag}: {says}" in out.stderr
    assert out.stdout == ""


def test_echo_lists_the_kinds_it_filters_on() -> None:
    out = subprocess.run(
        teamtree_cmd("echo", "--list-kinds"), capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    listed = out.stdout.split()
    assert "node.transition" in listed and "mission.result" in listed
    assert listed == sorted(listed)
