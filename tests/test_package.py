"""Every public module imports, and each package's __all__ is sorted and real."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGES = [
    "teamtree.agents",
    "teamtree.broker",
    "teamtree.planners",
    "teamtree.drivers",
    "teamtree.hardware",
]


def _modules() -> list[str]:
    names = []
    for package in PACKAGES:
        module = importlib.import_module(package)
        names.append(package)
        for info in pkgutil.walk_packages(module.__path__, prefix=f"{package}."):
            if not info.name.rsplit(".", 1)[-1].startswith("_"):
                names.append(info.name)
    return names


@pytest.mark.parametrize("name", _modules())
def test_module_imports(name: str) -> None:
    importlib.import_module(name)


def _isort_key(name: str) -> tuple[int, str]:
    """ruff's RUF022 order: CONSTANTS, then Classes, then functions."""
    if name.isupper():
        return (0, name)
    return (1, name) if name[:1].isupper() else (2, name)


def _packages() -> list[str]:
    return [n for n in _modules() if hasattr(importlib.import_module(n), "__path__")]


@pytest.mark.parametrize("name", _packages())
def test_all_is_sorted_and_resolves(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert list(exported) == sorted(exported, key=_isort_key), f"{name}.__all__ is not sorted"
    assert len(set(exported)) == len(exported), f"{name}.__all__ has duplicates"
    for attr in exported:
        assert hasattr(module, attr), f"{name}.__all__ names {attr!r}, which it does not define"


def test_no_bare_top_level_packages(tmp_path: Path) -> None:
    """Outside the checkout, only teamtree.<folder> is importable, never a bare name."""
    code = (
        "import importlib.util as u, teamtree.agents;"
        "print([n for n in ('agents','broker','planners','drivers','hardware') if u.find_spec(n)])"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_built_wheel_holds_every_module(tmp_path: Path) -> None:
    """A subpackage left out of the wheel would pass on an editable install: build one."""
    import zipfile

    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(root),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    (wheel,) = tmp_path.glob("teamtree-*.whl")
    in_wheel = {n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".py")}
    expected = {
        "teamtree/" + str(p.relative_to(root))
        for folder in ("agents", "broker", "drivers", "hardware", "planners")
        for p in (root / folder).rglob("*.py")
    }
    assert expected - in_wheel == set(), f"missing from the wheel: {sorted(expected - in_wheel)}"
