"""The agent-kind registry: entry points, lazy imports, clear errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from teamtree.agents import AGENT_KINDS
from teamtree.agents.runtime.registry import (
    ENTRY_POINT_GROUP,
    KindInfo,
    KindRegistry,
    UnknownKindError,
    _entry_points,
    _entry_points_from_importlib,
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


def test_the_folder_scan_reads_what_importlib_metadata_reads(tmp_path, monkeypatch) -> None:
    """The registry reads dist-info / egg-info folders itself (importlib.metadata cost
    ~10 ms of every agent's start); it must find what importlib.metadata finds: here,
    in this environment, and on a made-up sys.path with a plugin, a comment, another
    group, a stale egg-info declaring nothing first, a second copy of the plugin later
    on the path (the first one wins) and an old-style egg."""
    assert _entry_points() == _entry_points_from_importlib()
    stale, site, later = tmp_path / "stale", tmp_path / "site", tmp_path / "later"
    (stale / "lab_kinds.egg-info").mkdir(parents=True)
    (stale / "lab_kinds.egg-info" / "entry_points.txt").write_text("[console_scripts]\nx = a:b\n")
    (stale / "lab_kinds.egg-info" / "PKG-INFO").write_text("Name: lab_kinds\nVersion: 0.1\n")
    for root, version in ((site, "2.0"), (later, "1.0")):
        folder = root / f"lab_kinds-{version}.dist-info"
        folder.mkdir(parents=True)
        (folder / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: Lab_Kinds\nVersion: {version}\n\nName: not-a-header\n"
        )
        (folder / "entry_points.txt").write_text(
            "[console_scripts]\nlab = lab.cli:main\n\n"
            f"[{ENTRY_POINT_GROUP}]\n# a comment\ndwell = lab.dwell:DwellAgent\n"
            "sweeper=lab.sweep:SweeperAgent\n"
        )
    egg = tmp_path / "old_lab-0.3-py3.11.egg" / "EGG-INFO"  # a setuptools egg
    egg.mkdir(parents=True)
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: old-lab\nVersion: 0.3\n")
    (egg / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nmop = old_lab:MopAgent\n")
    monkeypatch.setattr(sys, "path", [str(stale), str(site), str(later), str(egg.parent)])
    found = _entry_points()
    assert found == [
        ("dwell", "lab.dwell:DwellAgent", "Lab_Kinds", "2.0"),
        ("sweeper", "lab.sweep:SweeperAgent", "Lab_Kinds", "2.0"),
        ("mop", "old_lab:MopAgent", "old-lab", "0.3"),
    ]
    assert found == _entry_points_from_importlib()
