"""The agent-kind registry: every kind a config can name, built-in or from a plugin.

Kinds are Python entry points in the group ``teamtree.agent_kinds`` (name = the kind,
value = ``"module:Class"``). teamtree declares its own kinds the same way in its
pyproject.toml, so a lab's package that declares, e.g.::

    [project.entry-points."teamtree.agent_kinds"]
    my_driver = "my_lab.driver:MyDriverAgent"

is run from a config (``kind = "my_driver"``) once it is pip-installed, with no change
to teamtree. Lookups are lazy: only the named kind's module is imported, so an agent
process pays for its own imports (scipy, gurobipy, ...) and no other's, and this module
imports no agent module itself.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from teamtree.agents.runtime.agent import Agent

ENTRY_POINT_GROUP = "teamtree.agent_kinds"
"""The entry-point group plugins register their agent kinds in."""

__all__ = [
    "ENTRY_POINT_GROUP",
    "KindInfo",
    "KindRegistry",
    "UnknownKindError",
    "installed_kinds",
]


class UnknownKindError(KeyError, LookupError):
    """A config named a kind no installed package registers."""

    def __init__(self, kind: str, installed: list[str]):
        self.kind = kind
        self.installed = installed
        super().__init__(kind)

    def __str__(self) -> str:
        known = ", ".join(self.installed) or "(none)"
        return (
            f"unknown agent kind {self.kind!r}; installed kinds: {known}. A plugin kind "
            f"is found once its package is pip-installed (entry-point group "
            f"{ENTRY_POINT_GROUP!r}); after adding kinds to an editable install, run "
            f"pip install -e again"
        )


@dataclass(frozen=True)
class KindInfo:
    """Where a kind comes from: its ``module:Class`` and the distribution declaring it."""

    kind: str
    target: str
    distribution: str
    version: str


def _entry_points() -> list[tuple[str, str, str, str]]:
    """The group's entry points as ``(kind, target, distribution, version)``, from one
    distribution of each name: the first on sys.path that declares any. (A stale
    ``*.egg-info`` of an old install, e.g. in a source checkout on sys.path, declares
    none and must not hide the installed metadata.)

    Read straight from the ``*.dist-info`` / ``*.egg-info`` folders (and eggs'
    ``EGG-INFO``) on sys.path, in importlib.metadata's order, rather than through
    ``importlib.metadata``: importing it and listing ~150 distributions through it cost
    ~10 ms of every agent's start, and an agent process needs only the few that declare
    kinds. With a zip archive on sys.path (whose metadata this does not read)
    importlib.metadata does the scan."""
    header = f"[{ENTRY_POINT_GROUP}]"
    folders = []
    for entry in sys.path:
        root = entry or "."
        if os.path.isfile(root):
            return _entry_points_from_importlib()
        try:
            names = os.listdir(root)
        except OSError:
            continue
        egg = root.lower().endswith(".egg")  # an old-style egg: its EGG-INFO folder
        for name in names:
            if name.endswith((".dist-info", ".egg-info")) or (egg and name.lower() == "egg-info"):
                text = _read(os.path.join(root, name, "entry_points.txt"))
                if text and header in text:
                    folders.append((os.path.join(root, name), text))

    def declared() -> Iterator[tuple[str, str, list[tuple[str, str]]]]:
        for folder, text in folders:
            eps = _group_entries(text, ENTRY_POINT_GROUP)
            if eps:
                meta = "METADATA" if folder.endswith(".dist-info") else "PKG-INFO"
                name, version = _name_and_version(_read(os.path.join(folder, meta)) or "")
                yield name, version, eps

    return _first_of_each(declared())


def _entry_points_from_importlib() -> list[tuple[str, str, str, str]]:
    """`_entry_points` through importlib.metadata (reads zip archives too)."""
    import importlib.metadata

    def declared() -> Iterator[tuple[str, str, list[tuple[str, str]]]]:
        for dist in importlib.metadata.distributions():
            text = dist.read_text("entry_points.txt")
            if not text or f"[{ENTRY_POINT_GROUP}]" not in text:
                continue
            eps = [(ep.name, ep.value) for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP]
            if eps:
                meta = dist.metadata
                yield meta["Name"] or "?", meta["Version"] or "?", eps

    return _first_of_each(declared())


def _first_of_each(
    declared: Iterable[tuple[str, str, list[tuple[str, str]]]],
) -> list[tuple[str, str, str, str]]:
    """``(kind, target, distribution, version)`` of the first distribution of each name
    among `declared` ``(name, version, [(kind, target)])``, in order."""
    seen: set[str] = set()
    out = []
    for shown, version, eps in declared:
        name = shown.lower().replace("_", "-")
        if name not in seen:
            seen.add(name)
            out.extend((kind, target, shown, version) for kind, target in eps)
    return out


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def _group_entries(text: str, group: str) -> list[tuple[str, str]]:
    """``(name, value)`` of section `group` of an entry_points.txt (an INI file, as the
    packaging spec writes it: ``name = module:attr`` lines; ``#``/``;`` comments)."""
    out = []
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line[1:-1].strip() == group
        elif inside and "=" in line:
            name, _, value = line.partition("=")
            out.append((name.strip(), value.strip()))
    return out


def _name_and_version(text: str) -> tuple[str, str]:
    """The ``Name`` and ``Version`` headers of core metadata (METADATA / PKG-INFO)."""
    name = version = "?"
    for line in text.splitlines():
        if not line:
            break  # the headers end at the first blank line
        key, _, value = line.partition(":")
        if key == "Name":
            name = value.strip()
        elif key == "Version":
            version = value.strip()
    return name, version


def installed_kinds() -> dict[str, KindInfo]:
    """Every kind registered in the environment, by name. Raises LookupError when two
    distributions register the same kind (the config would be ambiguous)."""
    out: dict[str, KindInfo] = {}
    for kind, target, distribution, version in _entry_points():
        info = KindInfo(kind, target, distribution, version)
        seen = out.get(kind)
        if seen is not None and seen.target != info.target:
            raise LookupError(
                f"agent kind {kind!r} is registered twice: {seen.target} "
                f"({seen.distribution}) and {info.target} ({info.distribution}); "
                f"uninstall one of the two packages"
            )
        out[kind] = info
    return out


class KindRegistry(Mapping[str, "type[Agent]"]):
    """The installed agent kinds; a class is imported on its first lookup.

    ``registry[kind]`` raises UnknownKindError (a KeyError) naming the kind and the
    installed ones, and LookupError when the class it names does not declare that kind.
    """

    def __init__(self, kinds: Mapping[str, KindInfo] | None = None):
        self._fixed = None if kinds is None else dict(kinds)
        self._found: dict[str, KindInfo] | None = None
        self._loaded: dict[str, type[Agent]] = {}

    @property
    def infos(self) -> dict[str, KindInfo]:
        """Every kind's origin (read from the environment once, on first use)."""
        if self._found is None:
            self._found = self._fixed if self._fixed is not None else installed_kinds()
        return self._found

    def refresh(self) -> None:
        """Read the environment's entry points again (after a pip install)."""
        self._found = None
        self._loaded.clear()

    def __getitem__(self, kind: str) -> type[Agent]:
        cls = self._loaded.get(kind)
        if cls is not None:
            return cls
        info = self.infos.get(kind)
        if info is None:
            raise UnknownKindError(kind, sorted(self.infos))
        module, _, name = info.target.partition(":")
        try:
            obj = importlib.import_module(module)
            for part in name.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError) as exc:
            raise LookupError(
                f"agent kind {kind!r} ({info.distribution}) names {info.target}, which "
                f"cannot be imported: {exc}"
            ) from exc
        declared = getattr(obj, "kind", None)
        if declared != kind:
            raise LookupError(f"{info.target} declares kind {declared!r}, not {kind!r}")
        self._loaded[kind] = obj  # type: ignore[assignment]
        return obj  # type: ignore[return-value]

    def __contains__(self, kind: object) -> bool:
        return kind in self.infos

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self.infos))

    def __len__(self) -> int:
        return len(self.infos)
