"""Terminal text fits its terminal: the monitor's page (``render_text``) for any team
and size, and `run`'s wrapped lines (``fit_line``) and presence lines."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.observers.monitor import MonitorState, render_text
from teamtree.agents.runtime.run_output import PresenceLines, compact_line, event_name, fit_line
from teamtree.broker.envelope import Envelope
from teamtree.broker.hlc import HlcStamp
from teamtree.broker.topics import parse

ids = st.from_regex(r"[a-z][a-z0-9-]{0,30}", fullmatch=True)
presences = st.sampled_from(["ONLINE", "OFFLINE", "CONNECTION_BROKEN"])
words = st.text(alphabet="abc xyz-_/()", max_size=300)


def _state(team: str, members: dict[str, tuple[str, str]]) -> MonitorState:
    state = MonitorState(team)
    for n, (agent, (presence, status)) in enumerate(members.items()):
        topic = f"teamtree/v1/{team}/{agent}/connection"
        body = {"state": presence, "kind": "robot"}
        state.feed(
            Envelope("presence", agent, n + 1, 1000 + n, HlcStamp(1000 + n, 0, agent), body),
            parse(topic),
        )
        state.row(agent).status = status
    return state


@settings(max_examples=60, deadline=None)
@given(
    team=ids,
    members=st.dictionaries(ids, st.tuples(presences, words), max_size=60),
    sys_line=words,
    width=st.integers(40, 220),  # a name column fits (80 and up is the target)
    height=st.integers(6, 80),
    connected=st.booleans(),
)
def test_the_monitor_page_fits_any_terminal_and_keeps_its_header(
    team: str, members: dict, sys_line: str, width: int, height: int, connected: bool
) -> None:
    state = _state(team, members)
    state.link(connected)
    state.feed_sys("$SYS/broker/version", sys_line.encode())
    snap = state.snapshot()
    lines = render_text(snap, width=width, height=height).split("\n")
    assert len(lines) <= height
    assert all(len(line) <= width for line in lines), [line for line in lines if len(line) > width]
    first = 1 if not connected else 0
    assert lines[first].startswith(f"team {team}"[:width].rstrip("…")[: width - 1])
    shown = [line for line in lines[first + 3 :] if line.split(" ")[0] in members]
    more = [int(m.group(1)) for line in lines if (m := re.match(r"^\+(\d+) more", line))]
    if members and len(lines) > 5:
        assert len(shown) + sum(more) == len(members)
    unbounded = render_text(snap, width=width).split("\n")  # --once: every agent
    assert not any(line.startswith("+") and " more" in line for line in unbounded)


def test_a_wide_terminal_shows_more_of_a_long_line() -> None:
    state = _state("t1", {"pr2": ("ONLINE", "working " + "x" * 150)})
    narrow = render_text(state.snapshot(), width=80, height=24).split("\n")
    wide = render_text(state.snapshot(), width=120, height=24).split("\n")
    row = next(line for line in narrow if line.startswith("pr2"))
    assert len(row) == 80 and row.endswith("…")
    assert len(next(line for line in wide if line.startswith("pr2"))) == 120


@settings(max_examples=200, deadline=None)
@given(name=ids, text=words, columns=st.integers(40, 200))
def test_a_run_line_wraps_to_the_terminal_and_keeps_every_word(
    name: str, text: str, columns: int
) -> None:
    prefix = f"{name[:12]:<12} | "
    lines = fit_line(prefix, text, columns)
    assert all(len(line) <= columns for line in lines)
    assert all(
        line.startswith(prefix) or line.startswith(" " * (len(prefix) - 2) + "| ") for line in lines
    )
    back = " ".join(line[len(prefix) :] for line in lines)
    assert "".join(back.split()) == "".join(text.split())  # nothing lost, nothing added
    assert fit_line(prefix, text, None) == [prefix + text]


def test_run_says_each_presence_change_once_and_knows_an_agents_event() -> None:
    said = PresenceLines()
    seen = [
        said.change(a, s) for a, s in [("pr2", "ONLINE"), ("pr2", "ONLINE"), ("pr2", "OFFLINE")]
    ]
    assert seen == ["pr2 ONLINE", None, "pr2 OFFLINE"]
    assert (
        event_name("04:00:44.417146 [info] peer.presence          agent=r peer=w")
        == "peer.presence"
    )
    assert event_name('{"event": "peer.presence", "agent": "r"}') == "peer.presence"
    assert event_name("Traceback (most recent call last):") is None
    assert event_name("{not json") is None


def test_a_log_line_on_a_terminal_drops_what_its_prefix_says() -> None:
    line = "04:15:50.701501 [info] driver.connected       agent=pr2-driver robot=pr2 agent=pr2"
    assert (
        compact_line("pr2-driver", line)
        == "04:15:50.701 [info] driver.connected robot=pr2 agent=pr2"
    )
    assert compact_line("pr2", "  ├── ✔ THEN  [root/0]  done") == "  ├── ✔ THEN  [root/0]  done"
