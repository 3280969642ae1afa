"""The agent-kind registry: entry points, lazy imports, clear errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from teamtree.agents import AGENT_KINDS
from teamtree.agents.runtime.registry import (
    KindInfo,
    KindRegistry,
    UnknownKindError,
    installed_kinds,
)


def test_builtin_kinds_are_entry_points() -> None:
    infos = installed_kinds()
    assert {"robot", "sim_driver", "vda5050_driver", "world", "recorder"} <= set(infos)
    assert infos["vda5050_driver"].target == "teamtree.drivers.vda5050.driver:Vda5050DriverAgent"
    assert infos["robot"].distribution == "teamtree"
    assert AGENT_KINDS["vda5050_driver"].kind == "vda5050_driver"


def test_unknown_kind_names_it_and_the_installed_ones() -> None:
    reg = KindRegistry(
        {"hello": KindInfo("hello", "teamtree.agents.runtime.hello:HelloAgent", "t", "1")}
    )
    with pytest.raises(UnknownKindError) as err:
        reg["helo"]
    text = str(err.value)
    assert "unknown agent kind 'helo'" in text and "installed kinds: hello" in text
    assert "teamtree.agent_kinds" in text
    assert reg.get("helo") is None and "helo" not in reg


def test_a_kind_whose_class_disagrees_or_is_missing_is_an_error() -> None:
    reg = KindRegistry({
        "greeter": KindInfo("greeter", "teamtree.agents.runtime.hello:HelloAgent", "x", "1"),
        "ghost": KindInfo("ghost", "teamtree.agents.nowhere:Ghost", "x", "1"),
    })  # fmt: skip
    with pytest.raises(LookupError, match="declares kind 'hello', not 'greeter'"):
        reg["greeter"]
    with pytest.raises(LookupError, match="cannot be imported"):
        reg["ghost"]


def test_only_the_named_kind_is_imported() -> None:
    code = (
        "import sys; from teamtree.agents.runtime.kinds import AGENT_KINDS; AGENT_KINDS['hello']; "
        "print(sorted(m for m in sys.modules if m.startswith('teamtree.drivers') "
        "or m in ('teamtree.agents.tasktree.robot', 'teamtree.agents.allocation.allocator')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
