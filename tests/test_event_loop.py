"""The event loop a process runs on (agents/runtime/event_loop.py): uvloop where it is
installed, asyncio's on request, and a clear error for a value it does not know."""

from __future__ import annotations

import asyncio
import inspect
import sys

import pytest

from teamtree.agents.runtime import EVENT_LOOP_ENV, loop_name, run_main, running_loop_name
from teamtree.broker import ConfigError

uvloop = pytest.importorskip("uvloop")  # a dependency on Linux: installed with teamtree


async def _which() -> str:
    await asyncio.sleep(0)
    return running_loop_name()


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, "uvloop"), ("", "uvloop"), ("auto", "uvloop"), ("UVloop", "uvloop"),
     ("asyncio", "asyncio"), (" asyncio ", "asyncio")],
)  # fmt: skip
def test_the_environment_picks_the_loop(
    monkeypatch: pytest.MonkeyPatch, value: str | None, expected: str
) -> None:
    if value is None:
        monkeypatch.delenv(EVENT_LOOP_ENV, raising=False)
    else:
        monkeypatch.setenv(EVENT_LOOP_ENV, value)
    assert loop_name() == expected
    assert run_main(_which()) == expected


def test_an_unknown_loop_is_a_config_error_and_the_coroutine_is_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(EVENT_LOOP_ENV, "trio")
    main = _which()
    with pytest.raises(ConfigError, match=r"TEAMTREE_EVENT_LOOP='trio': expected auto, uvloop"):
        run_main(main)
    assert inspect.getcoroutinestate(main) == inspect.CORO_CLOSED


def test_without_uvloop_auto_falls_back_and_uvloop_says_how_to_fix_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop raises ImportError
    monkeypatch.setenv(EVENT_LOOP_ENV, "auto")
    assert run_main(_which()) == "asyncio"
    monkeypatch.setenv(EVENT_LOOP_ENV, "uvloop")
    with pytest.raises(ConfigError, match="pip install uvloop, or set TEAMTREE_EVENT_LOOP=asyncio"):
        loop_name()
