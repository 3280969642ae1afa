"""The layers as a rule: which folder may import which, and what planners load.

broker/ is the ground; hardware/ builds on it; planners/ on hardware/ and broker/;
the agent runtime (agents/runtime/) on those; drivers/ and the agent kinds on the
runtime. No agent kind imports a driver (kinds are looked up by name), and the
runtime imports no kind, so no folder-level cycle can form.

Inside agents/ each room (a subpackage) may use the runtime, the shared task-tree
protocol (treeprotocol/) where it speaks it, and the rooms ``ROOMS`` lists; no room
imports the command line (cli/), which may use every room. No module imports itself
back through others: file-level circles are forbidden anywhere in the package (an
import under ``TYPE_CHECKING`` is a type's, not the module's, and does not count).
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


#: room of agents/ -> the other rooms it may import ("" is the package's own top files)
ROOMS = {
    "runtime": set(),
    "treeprotocol": {"runtime"},
    "tasktree": {"runtime", "treeprotocol"},
    "multitask": {"runtime", "treeprotocol"},
    "humans": {"runtime", "treeprotocol"},
    "allocation": {"runtime"},
    "capability": {"runtime"},
    "ltl": {"runtime"},
    "missions": {"runtime"},
    "world": {"runtime"},
    # observers read every room's messages: the wire types give their bodies' schemas
    "observers": {
        "runtime",
        "treeprotocol",
        "missions",
        "humans",
        "allocation",
        "capability",
        "ltl",
        "world",
    },
    "cli": {
        "runtime",
        "treeprotocol",
        "tasktree",
        "multitask",
        "humans",
        "allocation",
        "capability",
        "ltl",
        "missions",
        "world",
        "observers",
    },
    "": {"runtime", "cli"},
}


def _room(module: str) -> str | None:
    """The room of agents/ a dotted ``teamtree.agents...`` module is in (None outside)."""
    parts = module.split(".")
    if parts[:2] != ["teamtree", "agents"]:
        return None
    return parts[2] if len(parts) > 2 and parts[2] in ROOMS else ""


def test_every_room_is_ruled() -> None:
    rooms = {p.name for p in (ROOT / "agents").iterdir() if (p / "__init__.py").is_file()}
    assert rooms == set(ROOMS) - {""}, "add the new room of agents/ to ROOMS"


def test_rooms_import_only_what_they_may() -> None:
    bad = []
    for rel, _, module in _imports():
        parts = Path(rel).with_suffix("").parts
        own = _room(".".join(("teamtree", *parts)))
        target = _room(module)
        if own is None or target is None or target == own:
            continue
        if target not in ROOMS[own]:
            bad.append(f"{rel} ({own or 'agents'}) imports {module} ({target or 'agents'})")
    assert not bad, "imports between rooms of agents/ against ROOMS:\n" + "\n".join(bad)


def test_no_room_imports_the_command_line() -> None:
    assert all("cli" not in allowed for room, allowed in ROOMS.items() if room), ROOMS


def _modules() -> dict[str, Path]:
    """Dotted name -> file of every module of the package (a package by its __init__)."""
    found = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(("teamtree", *parts))] = path
    return found


def _lazy_homes(tree: ast.Module) -> dict[str, str]:
    """Name -> module (relative) of a package whose __init__ declares ``_HOMES`` for
    ``lazy_exports``."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "_HOMES" for t in node.targets
        ):
            homes = ast.literal_eval(node.value)
            return {name: module for module, names in homes.items() for name in names}
    return {}


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the nodes under ``if TYPE_CHECKING:``."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        test = node.test if isinstance(node, ast.If) else None
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        ):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def _file_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports when it runs (at the top or in a
    function; not under TYPE_CHECKING). A name taken from a package that loads its
    names lazily counts as an import of the module that holds it."""
    modules = _modules()
    trees = {name: ast.parse(path.read_text(), str(path)) for name, path in modules.items()}
    homes = {
        name: _lazy_homes(tree)
        for name, tree in trees.items()
        if modules[name].name == "__init__.py"
    }
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, tree in trees.items():
        package = name if modules[name].name == "__init__.py" else name.rsplit(".", 1)[0]
        skip = _type_checking_only(tree)
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([base] if base else [])])
                lazy = homes.get(base, {})
                targets = []
                for alias in node.names:
                    if f"{base}.{alias.name}" in modules:
                        targets.append(f"{base}.{alias.name}")
                    elif alias.name in lazy:
                        targets.append(f"{base}.{lazy[alias.name]}")
                    else:
                        targets.append(base)
            else:
                continue
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def test_no_file_level_import_circle() -> None:
    import networkx as nx

    graph = nx.DiGraph([(a, b) for a, targets in _file_graph().items() for b in targets])
    circles = sorted(" -> ".join([*c, c[0]]) for c in nx.simple_cycles(graph))
    assert not circles, "modules that import each other:\n" + "\n".join(circles[:20])


def test_the_graph_counts_function_imports_not_type_checking_ones() -> None:
    """A function-local import is an edge (the command line imports its rooms in its
    handlers); an import under TYPE_CHECKING is not (resync names the Agent type only)."""
    graph = _file_graph()
    assert "teamtree.agents.missions.protocol" in graph["teamtree.agents.cli.app"]
    assert "teamtree.agents.runtime.resync" in graph["teamtree.agents.runtime.agent"]
    assert "teamtree.agents.runtime.agent" not in graph["teamtree.agents.runtime.resync"]


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
