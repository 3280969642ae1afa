"""The places an AGV drives to and the loads it carries, as the driver's config gives
them, and how a behaviour leaf becomes a list of stops (pure: no I/O).

Behaviours (leaf name, case-insensitive; ``object`` is the leaf's positional argument):

============================== ========================================================
``MOVE(station)``              drive to the station (``to=`` or ``station=`` also work)
``PICK(load)``                 drive to the load's station and ``pick`` it
``DROP(load, to=station)``     drive to ``to`` (default: the load's goal) and ``drop``
``PLACE(load)``,               pick the load where it is and drop it at ``to`` (default:
``TRANSPORT(load, to=...)``    its goal): a bare leaf name ``pallet1`` is PLACE(pallet1)
============================== ========================================================

Anything else fails the behaviour with reason ``unsupported_behaviour`` before any
order is sent (no AGV is asked to do what it was never described as doing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PICK = "pick"
DROP = "drop"


class BehaviourError(ValueError):
    """A behaviour the site cannot turn into stops; ``reason`` is the progress reason."""

    def __init__(self, reason: str, detail: str):
        self.reason = reason
        super().__init__(f"{reason}: {detail}")


@dataclass(frozen=True)
class Station:
    """A node of the AGV's map: ``x``, ``y`` (metres), optional ``theta`` (rad)."""

    name: str
    x: float
    y: float
    theta: float | None = None
    map_id: str = "local"
    station_type: str = "floor"

    def node_position(self) -> dict[str, Any]:
        """The VDA 5050 ``nodePosition`` of this station."""
        out: dict[str, Any] = {"x": self.x, "y": self.y, "mapId": self.map_id}
        if self.theta is not None:
            out["theta"] = self.theta
        return out


@dataclass(frozen=True)
class Load:
    """A load the AGV can carry: where it starts and where it belongs."""

    name: str
    station: str
    goal: str | None = None
    load_type: str = "EPAL"
    dims: tuple[float, float, float] = (1.2, 0.8, 0.15)


@dataclass(frozen=True)
class Stop:
    """Drive to `station`, then run `actions` there: ``(actionType, {parameters})``."""

    station: str
    actions: tuple[tuple[str, dict[str, Any]], ...] = ()
    load: str | None = None


@dataclass
class Site:
    """Stations and loads; ``where`` follows each load as drops finish."""

    stations: dict[str, Station]
    loads: dict[str, Load]
    action_parameters: dict[str, Any] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for load in self.loads.values():
            for name in (load.station, load.goal):
                if name is not None and name not in self.stations:
                    raise ValueError(f"load {load.name!r} names unknown station {name!r}")
            self.where.setdefault(load.name, load.station)

    def _station(self, name: Any, what: str) -> Station:
        if not isinstance(name, str) or name not in self.stations:
            known = ", ".join(sorted(self.stations)) or "(none)"
            raise BehaviourError("unknown_station", f"{what} {name!r}; stations: {known}")
        return self.stations[name]

    def _load(self, name: Any) -> Load:
        if not isinstance(name, str) or name not in self.loads:
            known = ", ".join(sorted(self.loads)) or "(none)"
            raise BehaviourError("unknown_load", f"load {name!r}; loads: {known}")
        return self.loads[name]

    def _action(self, kind: str, load: Load, station: Station) -> tuple[str, dict[str, Any]]:
        params = {
            "stationType": station.station_type,
            "stationName": station.name,
            "loadType": load.load_type,
            "loadId": load.name,
            **self.action_parameters,
        }
        return kind, params

    def stops(self, behaviour: str, params: Mapping[str, Any]) -> list[Stop]:
        """The stops that carry out one behaviour leaf. Raises BehaviourError."""
        name = behaviour.lower()
        obj = params.get("object")
        if name == "move":
            target = params.get("to", params.get("station", obj))
            return [Stop(self._station(target, "station").name)]
        if name not in ("pick", "drop", "place", "transport"):
            raise BehaviourError(
                "unsupported_behaviour",
                f"{behaviour!r}; this driver runs MOVE, PICK, DROP, PLACE and TRANSPORT",
            )
        load = self._load(obj)
        here = self._station(self.where.get(load.name, load.station), "load station")
        if name == "pick":
            return [Stop(here.name, (self._action(PICK, load, here),), load.name)]
        to = params.get("to", load.goal)
        if to is None:
            raise BehaviourError("no_goal", f"load {load.name!r} has no goal; give to=STATION")
        goal = self._station(to, "goal station")
        drop = Stop(goal.name, (self._action(DROP, load, goal),), load.name)
        if name == "drop":
            return [drop]
        return [Stop(here.name, (self._action(PICK, load, here),), load.name), drop]


def site_from_config(
    stations: Mapping[str, Any], loads: Mapping[str, Any], action_parameters: Mapping[str, Any]
) -> Site:
    """A Site from the driver's ``stations``/``loads`` tables. Raises ValueError naming
    the entry and key that is wrong."""
    out_stations: dict[str, Station] = {}
    for name, raw in stations.items():
        if not isinstance(raw, Mapping):
            raise ValueError(f"stations.{name}: expected a table like {{x = 1.0, y = 2.0}}")
        extra = set(raw) - {"x", "y", "theta", "map_id", "station_type"}
        if extra:
            raise ValueError(f"stations.{name}: unknown key(s) {', '.join(sorted(extra))}")
        try:
            theta = raw.get("theta")
            out_stations[name] = Station(
                name,
                float(raw["x"]),
                float(raw["y"]),
                None if theta is None else float(theta),
                str(raw.get("map_id", "local")),
                str(raw.get("station_type", "floor")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"stations.{name}: needs numbers x and y ({exc})") from None
    out_loads: dict[str, Load] = {}
    for name, raw in loads.items():
        if not isinstance(raw, Mapping) or not isinstance(raw.get("at"), str):
            raise ValueError(f'loads.{name}: expected a table like {{at = "A", goal = "B"}}')
        extra = set(raw) - {"at", "goal", "load_type", "dims"}
        if extra:
            raise ValueError(f"loads.{name}: unknown key(s) {', '.join(sorted(extra))}")
        dims = raw.get("dims", [1.2, 0.8, 0.15])
        if not (isinstance(dims, list) and len(dims) == 3):
            raise ValueError(f"loads.{name}.dims: expected [length, width, height] in metres")
        out_loads[name] = Load(
            name,
            raw["at"],
            raw.get("goal"),
            str(raw.get("load_type", "EPAL")),
            (float(dims[0]), float(dims[1]), float(dims[2])),
        )
    return Site(out_stations, out_loads, dict(action_parameters))
