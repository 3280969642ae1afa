"""MCAP recordings read back by third-party readers: a tea party and a kitting episode,
each recorded by two recorder services at once (JSON lines and MCAP), then read with
the ``mcap`` Python package and with ``@mcap/core`` from npm (tests/foxglove). Every
channel has its JSON Schema, every message is valid against it, both recordings hold
the same messages, and ``teamtree timeline`` draws the same figure from either."""

from __future__ import annotations

import collections
import json
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
from mcap.reader import make_reader

from teamtree.agents.observers.mcap_record import McapRecordFile
from teamtree.agents.observers.record_channels import channel_topic
from teamtree.agents.observers.timeline import load_records, timeline_figure
from tests.conftest import REPO, run_recorded, teamtree_cmd

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NODE_DIR = REPO / "tests" / "foxglove"


def _with_mcap_recorder(config: Path, out: Path, stem: str, *, jsonl: bool) -> Path:
    """`config` copied to `out` with a recorder writing ``runs/<stem>.mcap`` (and one
    writing ``runs/<stem>.jsonl`` when the config has none)."""
    text = config.read_text()
    if jsonl:
        text += f'\n[[agents]]\nid = "recorder"\nkind = "recorder"\nrole = "service"\npath = "runs/{stem}.jsonl"\n'
    text += f'\n[[agents]]\nid = "recorder-mcap"\nkind = "recorder"\nrole = "service"\npath = "runs/{stem}.mcap"\n'
    path = out / config.name
    path.write_text(text)
    return path


def _key(record: dict) -> tuple:
    """A message, told apart from every other: a sender's HLC stamps are unique."""
    return (record["topic"], record["kind"], tuple(record["hlc"]))


def _window(records: list[dict], members: set[str]) -> tuple[int, int]:
    """From the members' first message to their last: both recorders were up."""
    stamps = [r["ts"] for r in records if r["sender"] in members]
    return min(stamps), max(stamps)


def _read_with_mcap_python(path: Path) -> tuple[dict, list[tuple[str, dict]]]:
    """Channel topic -> (schema name, encoding, schema) and every (topic, message)."""
    channels, messages = {}, []
    with path.open("rb") as f:
        reader = make_reader(f)
        summary = reader.get_summary()
        assert summary is not None, "no summary: the recorder did not finish the file"
        for channel in summary.channels.values():
            schema = summary.schemas.get(channel.schema_id)
            assert schema is not None, f"channel {channel.topic} has no schema"
            assert channel.message_encoding == "json"
            channels[channel.topic] = (schema.name, schema.encoding, json.loads(schema.data))
        for _, channel, message in reader.iter_messages(log_time_order=False):
            messages.append((channel.topic, json.loads(message.data)))
    return channels, messages


def _read_with_mcap_core(path: Path) -> dict:
    if shutil.which("node") is None or not (NODE_DIR / "node_modules" / "@mcap" / "core").is_dir():
        pytest.fail(
            "@mcap/core is not installed: run `npm ci` in tests/foxglove (tests/run.sh does)"
        )
    out = subprocess.run(
        ["node", str(NODE_DIR / "read_mcap.mjs"), str(path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def _check_recordings(
    tmp_path: Path, stem: str, jsonl_records: list[dict], members: set[str], *, tree: bool
) -> None:
    mcap_path = tmp_path / "runs" / f"{stem}.mcap"
    channels, messages = _read_with_mcap_python(mcap_path)
    records = [m for topic, m in messages if topic != "/log"]
    # every channel's schema is a JSON Schema, and every message is valid against it
    for topic, (_, encoding, schema) in channels.items():
        assert encoding == "jsonschema", topic
        jsonschema.Draft202012Validator.check_schema(schema)
    validators = {t: jsonschema.Draft202012Validator(s) for t, (_, _, s) in channels.items()}
    for topic, message in messages:
        errors = list(validators[topic].iter_errors(message))
        assert not errors, (topic, errors[0].message, message)
        if topic != "/log":
            assert topic == channel_topic(message["topic"], message["kind"])
            assert channels[topic][0] == f"teamtree.{message['kind']}"
    # the recorder's summary is in the file's log
    logged = [m["message"] for topic, m in messages if topic == "/log"]
    assert any(line.startswith("recorder.saved") for line in logged), logged
    # the same messages as the JSON-lines recorder's, while both were surely listening
    first, last = _window(jsonl_records, members)
    inside = lambda recs: collections.Counter(_key(r) for r in recs if first <= r["ts"] <= last)  # noqa: E731
    assert inside(records) == inside(jsonl_records)
    member_counts = collections.Counter(
        (r["sender"], r["kind"]) for r in jsonl_records if r["sender"] in members
    )
    assert member_counts == collections.Counter(
        (r["sender"], r["kind"]) for r in records if r["sender"] in members
    )
    # @mcap/core (npm) reads the very same channels, schemas and messages
    core = _read_with_mcap_core(mcap_path)
    assert core["library"] == "teamtree"
    by_id = {c["id"]: c for c in core["channels"]}
    assert {c["topic"]: (c["schema"]["name"], c["schema"]["encoding"], json.loads(c["schema"]["data"]))
            for c in core["channels"]} == channels  # fmt: skip
    core_messages = [(by_id[m["channel"]]["topic"], m["data"]) for m in core["messages"]]
    order = lambda m: (m[0], json.dumps(m[1].get("hlc") or m[1].get("timestamp")))  # noqa: E731
    # compared as values: JavaScript writes the float 1.0 back as 1
    assert sorted(core_messages, key=order) == sorted(messages, key=order)
    # teamtree reads it back as it reads the JSON lines: the same timeline
    window = lambda recs: [r for r in recs if first <= r["ts"] <= last]  # noqa: E731
    mcap_records = load_records(mcap_path)
    assert len(mcap_records) == len(records)
    got = timeline_figure(window(mcap_records))
    want = timeline_figure(window(jsonl_records))
    assert (got.spans, got.labels, got.nodes) == (want.spans, want.labels, want.nodes)
    assert got.end == want.end
    if not tree:  # a kitting episode has no task tree to draw
        return
    drawn = subprocess.run(
        teamtree_cmd("timeline", str(mcap_path), "-o", str(tmp_path / "from-mcap.png")),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert drawn.returncode == 0, drawn.stderr


def test_a_tea_party_recorded_to_mcap_reads_back_everywhere(tmp_path: Path) -> None:
    config = _with_mcap_recorder(
        REPO / "configs" / "tea_party_s1.toml", tmp_path, "tea_party_s1", jsonl=False
    )
    _, records = run_recorded(config, "tea_party_s1.jsonl", tmp_path)
    figure = timeline_figure(records)
    assert figure.spans, "the tea party drew no timeline"
    _check_recordings(tmp_path, "tea_party_s1", records, {"pr2", "baxter"}, tree=True)


def test_a_kitting_episode_recorded_to_mcap_reads_back_everywhere(tmp_path: Path) -> None:
    config = _with_mcap_recorder(REPO / "configs" / "kitting.toml", tmp_path, "kitting", jsonl=True)
    _, records = run_recorded(config, "kitting.jsonl", tmp_path)
    assert any(r["kind"] == "mission.result" and r["body"]["ok"] for r in records)
    _check_recordings(tmp_path, "kitting", records, {"cobot", "human"}, tree=False)


def test_a_json_lines_recording_converts_to_mcap_and_back(tmp_path: Path) -> None:
    """``teamtree convert``: JSON lines -> MCAP -> JSON lines keeps every record."""
    records = [
        {"topic": "teamtree/v1/t/pr2/state", "kind": "node.transition", "sender": "pr2",
         "ts": 1000 + i, "hlc": [1000 + i, 0, "pr2"], "recorded_ms": 1001 + i,
         "body": {"node": f"root/{i}", "agent": "pr2", "status": "done",
                  "stamp": [1000 + i, 0, "pr2"], "potential": None, "grasp": 50.0}}
        for i in range(3)
    ]  # fmt: skip
    source = tmp_path / "run.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    for args in (("run.jsonl", "-o", "run.mcap"), ("run.mcap", "-o", "back.jsonl")):
        out = subprocess.run(teamtree_cmd("convert", *args), capture_output=True, text=True,
                             cwd=tmp_path, timeout=120)  # fmt: skip
        assert out.returncode == 0, out.stderr
    assert load_records(tmp_path / "run.mcap") == records
    assert load_records(tmp_path / "back.jsonl") == records
    with (tmp_path / "run.mcap").open("rb") as f:
        logged = [m.log_time for _, _, m in make_reader(f).iter_messages()]
    assert logged == [r["recorded_ms"] * 1_000_000 for r in records]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"\x00\xffnot text", "not a recording: neither MCAP nor JSON lines"),
        (b"hello\n", "line 1 is not JSON"),
    ],
)
def test_timeline_says_what_is_wrong_with_a_file_it_cannot_read(
    tmp_path: Path, content: bytes, says: str
) -> None:
    path = tmp_path / "bad.mcap"
    path.write_bytes(content)
    out = subprocess.run(teamtree_cmd("timeline", str(path), "-o", str(tmp_path / "t.png")),
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 2 and says in out.stderr and "bad.mcap" in out.stderr


def test_a_recording_cut_short_reads_up_to_its_end(tmp_path: Path) -> None:
    """A recorder killed before it finished its file: the messages of its whole chunks
    are read, and no error."""
    records = [
        {"topic": "teamtree/v1/t/a/c", "kind": "counter", "sender": "a", "ts": i,
         "hlc": [i, 0, "a"], "body": {"n": i, "pad": "x" * 200}}
        for i in range(4000)
    ]  # fmt: skip
    path = tmp_path / "run.mcap"
    out = McapRecordFile(path)
    for record in records:
        assert out.write_record(record)
    out.close()
    data = path.read_bytes()
    path.write_bytes(data[:-64])  # the footer and part of the summary lost
    assert load_records(path) == records
    path.write_bytes(data[: len(data) // 2])  # a chunk cut in two: the chunks before it
    kept = load_records(path)
    assert 0 < len(kept) < len(records) and kept == records[: len(kept)]


def test_a_resumed_mission_records_on_in_a_new_mcap_file_beside_the_first(
    tmp_path: Path, mosquitto
) -> None:
    """An MCAP file cannot be appended to: the resumed mission's recording goes on in
    ``<stem>.resumed-<ms>.mcap``, and the first file stays whole."""
    text = (REPO / "configs" / "tea_party_s1.toml").read_text()
    text = re.sub(r"^tree = .*$", 'tree = "AND(cup, sandwich)"', text, count=1, flags=re.M)
    text = text.replace('path = "runs/tea_party_s1.jsonl"', 'path = "runs/tea.mcap"')
    config = tmp_path / "tea.toml"
    config.write_text(text)

    def run(*args: str) -> str:
        out = subprocess.run(teamtree_cmd("run", str(config), "--broker", mosquitto.url, *args),
                             capture_output=True, text=True, timeout=240, cwd=tmp_path)  # fmt: skip
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
        return out.stdout

    found = re.search(r"(?:starting|resuming) mission (\S+)", run())
    assert found
    mission = found[1]
    first = tmp_path / "runs" / f"tea.{mission}.mcap"
    before = load_records(first)
    assert {r["body"]["node"] for r in before if r["kind"] == "node.transition"} >= {
        "root/0",
        "root/1",
    }
    run("--resume", mission)
    assert load_records(first) == before
    resumed = sorted((tmp_path / "runs").glob(f"tea.{mission}.resumed-*.mcap"))
    assert len(resumed) == 1, sorted((tmp_path / "runs").iterdir())
    again = load_records(resumed[0])
    assert again and not [
        r for r in again if r["kind"] == "node.transition" and r["body"].get("status") == "working"
    ], "resuming a finished mission re-ran behaviours"
    assert (tmp_path / "runs" / "tea.mcap").resolve() == resumed[0].resolve()
