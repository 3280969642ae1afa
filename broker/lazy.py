"""Package exports loaded on first use (PEP 562), for packages on an agent's start-up path.

An agent process imports the runtime before it connects; re-exporting every name of a
package eagerly would import the launcher, the registry and the rest with it. A package
declares where each public name lives and gets ``__all__``, ``__getattr__`` and
``__dir__`` that import a module only when one of its names is first read.

``lazy_module`` does the same for a whole third-party module (numpy on a robot's path:
a quarter of its start-up), so an agent connects and says ONLINE before it loads one.
``preload`` imports one in a worker thread when the agent knows it will need it:
loaded on first use on the event loop, numpy would stall every agent of the process at
a robot's first observation, right as the mission starts.
What the import made is then frozen out of the collector's scans (``long_lived``).
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports", "lazy_module", "preload"]

_LAZY: dict[str, types.ModuleType] = {}


class _LazyModule(types.ModuleType):
    """Stands for a module until one of its names is read; then imports it and takes
    its names into its own namespace, so later reads are plain attribute lookups."""

    def __getattr__(self, attr: str) -> Any:  # only for names not yet in __dict__
        module = importlib.import_module(self.__name__)
        for key, value in module.__dict__.items():
            if key not in ("__class__", "__dict__"):
                self.__dict__[key] = value
        return getattr(module, attr)


def lazy_module(name: str) -> types.ModuleType:
    """A stand-in for module `name` that imports it on the first name read from it
    (``np = lazy_module("numpy")``; ``np.array`` then imports numpy). One stand-in per
    name. ``import numpy`` under ``TYPE_CHECKING`` keeps the types for checkers."""
    module = _LAZY.get(name)
    if module is None:
        module = _LAZY[name] = _LazyModule(name)
    return module


async def preload(*names: str) -> None:
    """Import modules `names` in a worker thread, so the event loop keeps serving
    meanwhile (a module already imported costs nothing)."""
    import asyncio  # here: the planners import this module and must not load asyncio
    import sys

    from teamtree.broker.long_lived import freeze_imported

    loop = asyncio.get_running_loop()
    for name in names:
        fresh = name not in sys.modules  # (one being imported by another thread is not)
        await loop.run_in_executor(None, importlib.import_module, name)
        if fresh:
            freeze_imported()  # what it made lives on: out of the full collections' scans


def lazy_exports(
    package: str, homes: Mapping[str, tuple[str, ...]]
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``(__all__, __getattr__, __dir__)`` for `package`, whose names live in the
    modules `homes` maps them from (module path relative to `package`).

    ``__all__`` is in ruff's RUF022 order (CONSTANTS, Classes, functions)."""
    module_of = {name: module for module, names in homes.items() for name in names}
    names = sorted(module_of, key=lambda n: (0 if n.isupper() else 1 if n[:1].isupper() else 2, n))
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return names, __getattr__, __dir__
