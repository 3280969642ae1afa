"""Optional observers without processes: the ``required`` key, the recorder's
``recording`` factsheet field, what ``run`` says of lost observers, and the record
file that keeps whole lines when its disk fills."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, note, seed, settings
from hypothesis import strategies as st

from teamtree.agents.observers.record_file import RecordFile, os_error_phrase
from teamtree.agents.runtime.config import parse_config
from teamtree.agents.runtime.recording import (
    ObserverLosses,
    RecordingState,
    exit_phrase,
    recording_of,
)
from teamtree.broker import ConfigError


def _config(tmp_path: Path, *entries: dict) -> object:
    data = {"team": {"name": "t"}, "agents": [{"id": "a", "kind": "hello"}, *entries]}
    return parse_config(data, tmp_path / "team.toml")


def test_an_observer_service_is_optional_unless_required(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        {"id": "rec", "kind": "recorder", "role": "service"},
        {"id": "rec2", "kind": "recorder", "role": "service", "required": True},
        {"id": "rec3", "kind": "recorder", "role": "service", "required": False},
        {"id": "world", "kind": "world", "role": "service"},
        {"id": "world2", "kind": "world", "role": "service", "required": True},
    )
    optional = {s.id for s in config.agents if s.optional}
    assert optional == {"rec", "rec3"}
    assert "required" not in config.agent("rec2").params  # not a kind parameter


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"id": "b", "kind": "hello", "required": True}, "only a service's entry takes it"),
        (
            {"id": "w", "kind": "world", "role": "service", "required": False},
            "only an observer (monitor, recorder, web) can be optional",
        ),
        ({"id": "r", "kind": "recorder", "role": "service", "required": "yes"}, "true or false"),
    ],
)
def test_a_bad_required_key_is_refused_naming_it(tmp_path: Path, entry: dict, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _config(tmp_path, entry)
    assert "agents[1].required" in str(caught.value) and message in str(caught.value)


def test_run_says_a_dead_observer_once_and_the_result_block_says_where_it_stopped() -> None:
    losses = ObserverLosses()
    assert losses.saw_factsheet("rec", {"kind": "recorder"}, 0.1) is None
    sheet = {"recording": {"state": "writing", "path": "runs/x.jsonl"}}
    assert losses.saw_factsheet("rec", sheet, 0.2) is None
    line = losses.exited("rec", "recorder", -9, 3.25)
    assert line is not None and "code -9 (killed by SIGKILL)" in line and "goes on" in line
    assert losses.exited("rec", "recorder", -9, 4.0) is None  # said once
    assert losses.block_lines() == [
        "  recording INCOMPLETE: rec (recorder) exited with code -9 (killed by SIGKILL) "
        "3.2 s into the run; runs/x.jsonl holds what it wrote until then"
    ]
    assert losses.note() == "The recording is incomplete (rec: see above)."
    assert ObserverLosses().note() == "" and ObserverLosses().block_lines() == []


def test_a_failed_recording_is_said_once_with_its_file_count_and_error() -> None:
    losses = ObserverLosses()
    failed = RecordingState("failed", "r.jsonl", 12, "ENOSPC: No space left on device", 1)
    sheet = {"recording": msgspec.to_builtins(failed)}
    line = losses.saw_factsheet("rec", sheet, 2.04)
    assert line == (
        "cannot record: rec stopped writing r.jsonl after 12 message(s), 2.0 s into the "
        "run: ENOSPC: No space left on device; the mission goes on"
    )
    assert losses.saw_factsheet("rec", sheet, 3.0) is None
    losses.exited("rec", "recorder", 0, 9.0)  # the first loss is what the block says
    assert losses.block_lines() == [
        "  recording INCOMPLETE: rec stopped writing r.jsonl after 12 message(s), 2.0 s into "
        "the run: ENOSPC: No space left on device"
    ]


def test_exit_phrases() -> None:
    assert exit_phrase(1) == "code 1"
    assert exit_phrase(-15) == "code -15 (killed by SIGTERM)"
    assert exit_phrase(-99) == "code -99 (killed by signal 99)"


@seed(20451)
@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(["recording", "state", "path", "written", "error", "x"]), inner
            )
        ),
        max_leaves=12,
    )
)
def test_any_factsheet_reads_as_a_recording_or_none_never_an_error(body: object) -> None:
    """Forged or malformed factsheets say nothing about a recording (seed 20451)."""
    note(repr(body))
    state = recording_of(body)
    if state is not None:
        assert isinstance(state, RecordingState)
        assert ObserverLosses().saw_factsheet("r", body, 1.0) is None or state.state == "failed"


@given(
    st.builds(
        RecordingState,
        st.sampled_from(["writing", "failed"]),
        st.text(max_size=20),
        st.integers(0, 10**9),
        st.text(max_size=20),
        st.integers(0, 2**53),
    )
)
@seed(20452)
def test_a_recording_state_round_trips_through_a_factsheet(state: RecordingState) -> None:
    assert recording_of({"recording": msgspec.to_builtins(state)}) == state


def test_a_record_file_on_a_full_device_fails_once_and_writes_no_more(tmp_path: Path) -> None:
    link = tmp_path / "full.jsonl"
    link.symlink_to("/dev/full")
    record = RecordFile(link, append=True)
    assert record.write('{"a": 1}') is False
    assert record.error is not None and record.error.errno == errno.ENOSPC
    assert os_error_phrase(record.error) == "ENOSPC: No space left on device"
    assert not record.writing and record.write('{"b": 2}') is False and record.written == 0


def test_a_record_file_keeps_its_whole_lines_and_appends_or_truncates(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    record = RecordFile(path)
    assert record.write(json.dumps({"n": 1})) and record.write(json.dumps({"n": 2}))
    record.close()
    record = RecordFile(path, append=True)
    assert record.size == os.path.getsize(path) and record.write(json.dumps({"n": 3}))
    record.close()
    assert [json.loads(x)["n"] for x in path.read_text().splitlines()] == [1, 2, 3]
    RecordFile(path).close()  # not appending: a new recording
    assert path.read_text() == ""


def test_the_protocol_docs_name_every_field_of_the_recording() -> None:
    text = (Path(__file__).resolve().parent.parent / "docs" / "protocol.md").read_text()
    paragraph = text[text.index("**A recorder's factsheet**") :].split("\n\n", 1)[0]
    fields = msgspec.structs.fields(RecordingState)
    listed = "{" + ", ".join(f.name + ("" if f.required else "?") for f in fields) + "}"
    assert listed in paragraph, (listed, paragraph)
