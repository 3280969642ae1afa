"""The layers as a rule: which folder may import which, and what planners load.

broker/ is the ground; hardware/ builds on it; planners/ on hardware/ and broker/;
the agent runtime (agents/runtime/) on those; drivers/ and the agent kinds on the
runtime. No agent kind imports a driver (kinds are looked up by name), and the
runtime imports no kind, so no folder-level cycle can form.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("broker", "hardware", "planners", "drivers", "agents")

#: unit -> units it may import. A unit is a folder, or agents' runtime on its own.
ALLOWED = {
    "broker": set(),
    "hardware": {"broker"},
    "planners": {"broker", "hardware"},
    "agents.runtime": {"broker", "hardware"},
    "drivers": {"broker", "hardware", "agents.runtime"},
    "agents": {"broker", "hardware", "planners", "agents.runtime"},
}


def _unit(parts: list[str]) -> str:
    """The layer unit of a module given as path parts below the repository root."""
    if parts[0] == "agents" and len(parts) > 1 and parts[1] == "runtime":
        return "agents.runtime"
    return parts[0]


def _imports() -> list[tuple[str, str, str]]:
    """(importing file, its unit, imported teamtree module) for every import anywhere."""
    found = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT)
            unit = _unit(list(rel.parts))
            for node in ast.walk(ast.parse(path.read_text(), str(rel))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                found += [(str(rel), unit, n) for n in names if n.startswith("teamtree.")]
    return found


def test_no_backwards_or_cyclic_edge() -> None:
    bad = []
    for rel, unit, module in _imports():
        target = _unit(module.split(".")[1:])
        if target == unit or (unit == "agents" and target == "agents"):
            continue
        if target not in ALLOWED[unit]:
            bad.append(f"{rel} ({unit}) imports {module} ({target})")
    assert not bad, "imports against the layering:\n" + "\n".join(bad)


def test_the_allowed_graph_has_no_cycle() -> None:
    import networkx as nx

    graph = nx.DiGraph([(a, b) for a, targets in ALLOWED.items() for b in targets])
    assert nx.is_directed_acyclic_graph(graph)


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


HEAVY = {"asyncio", "aiomqtt", "paho", "zmq", "ssl", "structlog"}


@pytest.mark.parametrize(
    "package",
    [
        "teamtree.planners.tasktree",
        "teamtree.planners.allocation",
        "teamtree.planners.capability",
        "teamtree.planners.ltl",
        "teamtree.planners.multitask",
        "teamtree.hardware",
    ],
)
def test_planners_load_no_io(package: str) -> None:
    loaded = _loaded_after(f"import {package}")
    assert not (HEAVY & loaded), f"importing {package} loads {sorted(HEAVY & loaded)}"


def test_broker_errors_do_not_load_the_mqtt_client() -> None:
    loaded = _loaded_after("from teamtree.broker import ConfigError, SpecificationError")
    assert not (HEAVY & loaded), sorted(HEAVY & loaded)
    assert "teamtree.broker.connection" not in loaded


#: what hardware/ and planners/ may take from broker/ besides its error classes: the
#: I/O-free helper that loads a package's names on first use
BROKER_UTILITIES = {"teamtree.broker.lazy"}


def test_hardware_and_planners_take_only_errors_from_broker() -> None:
    """The issue's rule: hardware/ and planners/ import nothing of broker/ but its errors
    (and the lazy-export helper), so they never reach the wire or the MQTT client."""
    import teamtree.broker.errors as errors

    error_names = {
        n for n, v in vars(errors).items() if isinstance(v, type) and issubclass(v, Exception)
    }
    bad = []
    for folder in ("hardware", "planners"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT)
            for node in ast.walk(ast.parse(path.read_text(), str(rel))):
                if isinstance(node, ast.Import):
                    taken = [(a.name, None) for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    taken = [(node.module, a.name) for a in node.names]
                else:
                    continue
                for module, name in taken:
                    if module == "teamtree.broker" and name in error_names:
                        continue
                    if module in ("teamtree.broker.errors", *BROKER_UTILITIES):
                        continue
                    if module.startswith("teamtree.broker"):
                        bad.append(f"{rel}: {module}{'.' + name if name else ''}")
    assert not bad, "hardware/planners take more than errors from broker/:\n" + "\n".join(bad)
