"""Package exports loaded on first use (PEP 562), for packages on an agent's start-up path.

An agent process imports the runtime before it connects; re-exporting every name of a
package eagerly would import the launcher, the registry and the rest with it. A package
declares where each public name lives and gets ``__all__``, ``__getattr__`` and
``__dir__`` that import a module only when one of its names is first read.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


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
