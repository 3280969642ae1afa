"""What a VDA 5050 AGV can do, as its factsheet says: the actions it lists and its limits.

The driver publishes this in its own factsheet and refuses a behaviour needing an
action the AGV's factsheet does not list. It reads only the factsheet the AGV sent
(none: an empty reading), so it is pure.
"""

from __future__ import annotations

from typing import Any

BEHAVIOURS = ["DROP", "MOVE", "PICK", "PLACE", "TRANSPORT"]
"""The behaviours the driver turns into orders (``site.Site.stops``)."""


def capabilities(factsheet: dict[str, Any] | None) -> dict[str, Any]:
    """What the AGV's `factsheet` says it can do (actions and limits), if it sent one."""
    fs = factsheet or {}
    actions = sorted(
        {
            a.get("actionType")
            for a in (fs.get("protocolFeatures") or {}).get("agvActions") or []
            if isinstance(a, dict) and isinstance(a.get("actionType"), str)
        }
    )
    physical = fs.get("physicalParameters") or {}
    limits = {
        k: physical[k]
        for k in ("speedMax", "accelerationMax", "heightMax", "heightMin")
        if k in physical
    }
    load_spec = fs.get("loadSpecification") or {}
    return {
        "from_factsheet": bool(fs),
        "actions": actions,
        "limits": limits,
        "load_sets": len(load_spec.get("loadSets") or []),
        "behaviours": list(BEHAVIOURS),
    }
