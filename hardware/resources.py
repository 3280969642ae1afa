"""Robots as collections of resources (seed 004 §III.B, Fig. 2): grippers, base, head.

A ``Resource`` has the paper's five properties: type, number of owners, channel
(exclusive, or shared with an intention such as ``"still at 1.00,2.00"``), name and
locked flag. ``ResourceState`` is the canonical, immutable state the root of a task
tree keeps and passes down (§III.C); behaviours ask it for ``ResourceNeed``s.

Readings where the paper is not explicit:

- ``locked`` is the paper's "in use" flag: the state keeps it true whenever a resource
  has owners. A profile may also declare a resource locked with no owners; that is
  hardware out of service, which no behaviour can get.
- Owners are ids. A resource handed on to a later behaviour (a move hands the base to
  what follows it) is owned by that behaviour's id before it starts, a *reservation*;
  a claimant owns a resource when its own id or an ancestor's is among the owners.
- Two needs are compatible on one resource only when both are shared with the same
  intention; a free resource takes the channel of its first claimant.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from teamtree.broker import SpecificationError

__all__ = [
    "PR2_RESOURCES",
    "Access",
    "Channel",
    "Resource",
    "ResourceNeed",
    "ResourceProfile",
    "ResourceState",
    "ResourceType",
    "pr2_profile",
    "resource_profile_from_dict",
]


class ResourceType(StrEnum):
    """Groups of actuators and sensors (Fig. 2); other type names are allowed as strings."""

    GRIPPER = "gripper"
    """An end effector; holds at most one object."""
    BASE = "base"
    """The mobile base: one destination at a time, or still at one place for many."""
    HEAD = "head"
    """The pan-tilt head with its cameras."""
    SENSOR = "sensor"
    """Any other sensor (laser, camera) a behaviour may share."""


class Access(StrEnum):
    """How a behaviour wants a resource (§III.B "Channel")."""

    EXCLUSIVE = "exclusive"
    """The only user of the resource."""
    SHARED = "shared"
    """Shared with other users whose intention is the same."""


@dataclass(frozen=True)
class Channel:
    """The intention a resource is used with: exclusive, or shared with ``intention``."""

    access: Access
    intention: str = ""

    def admits(self, other: Channel) -> bool:
        """True when a user with channel ``other`` may join users with this channel."""
        return (
            self.access is Access.SHARED
            and other.access is Access.SHARED
            and self.intention == other.intention
        )

    def __str__(self) -> str:
        return self.access.value + (f"({self.intention})" if self.intention else "")


@dataclass(frozen=True)
class Resource:
    """One resource (§III.B): type, owners (their number is ``n_owners``), channel, name, locked."""

    name: str
    type: str
    owners: frozenset[str] = frozenset()
    channel: Channel | None = None
    locked: bool = False

    @property
    def n_owners(self) -> int:
        """The paper's "number of owners": behaviours currently using the resource."""
        return len(self.owners)

    @property
    def free(self) -> bool:
        """Neither owned nor locked."""
        return not self.owners and not self.locked

    @property
    def out_of_service(self) -> bool:
        """Locked with no owner: declared unavailable by the profile."""
        return self.locked and not self.owners


@dataclass(frozen=True)
class ResourceNeed:
    """What a behaviour needs: one resource of ``type`` (or the one called ``name``)."""

    type: str
    access: Access
    intention: str = ""
    name: str | None = None

    @property
    def channel(self) -> Channel:
        """The channel the behaviour will hold the resource with."""
        return Channel(self.access, self.intention)


Assignment = tuple[tuple[str, Channel], ...]
"""Resolved needs: (resource name, channel) pairs, in the order of the needs."""


@dataclass(frozen=True)
class ResourceState:
    """The canonical state of one robot's resources; immutable, hashable, ordered by profile.

    Every method returns a new state. ``claimant`` arguments are collections of ids
    that count as the claimant itself (its leaf id and its ancestors' ids).
    """

    resources: tuple[Resource, ...]
    _index: Mapping[str, int] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        index = {r.name: i for i, r in enumerate(self.resources)}
        if len(index) != len(self.resources):
            raise SpecificationError("resource names must be unique within a robot")
        object.__setattr__(self, "_index", index)

    def __iter__(self) -> Iterator[Resource]:
        return iter(self.resources)

    def __getitem__(self, name: str) -> Resource:
        try:
            return self.resources[self._index[name]]
        except KeyError:
            raise KeyError(f"no resource {name!r} on this robot") from None

    def of_type(self, rtype: str) -> tuple[Resource, ...]:
        """Resources of ``rtype`` in profile order."""
        return tuple(r for r in self.resources if r.type == rtype)

    def owned_by(self, claimant: Collection[str]) -> tuple[str, ...]:
        """Names of the resources any id in ``claimant`` owns."""
        ids = set(claimant)
        return tuple(r.name for r in self.resources if r.owners & ids)

    def resolve(
        self, needs: Iterable[ResourceNeed], claimant: Collection[str]
    ) -> Assignment | None:
        """Pick a resource for every need, or None when one cannot be met (isPossible, Alg. 1).

        A resource the claimant already owns is preferred; otherwise an exclusive need
        takes a free one and a shared need a free one or one shared with the same
        intention. Two needs never get the same resource. Never raises.
        """
        ids = set(claimant)
        used: set[str] = set()
        out: list[tuple[str, Channel]] = []
        for need in needs:
            if need.name is not None:
                pool = (self[need.name],) if need.name in self._index else ()
            else:
                pool = self.of_type(need.type)
            chosen = None
            for res in pool:  # owned first
                if res.name not in used and res.owners & ids and self._joinable(res, need, ids):
                    chosen = res
                    break
            if chosen is None:
                for res in pool:
                    if res.name not in used and self._joinable(res, need, ids):
                        chosen = res
                        break
            if chosen is None:
                return None
            used.add(chosen.name)
            out.append((chosen.name, need.channel))
        return tuple(out)

    @staticmethod
    def _joinable(res: Resource, need: ResourceNeed, ids: set[str]) -> bool:
        if res.out_of_service:
            return False
        others = res.owners - ids
        if not others:
            return True
        return res.channel is not None and res.channel.admits(need.channel)

    def acquire(
        self, owner: str, assignment: Assignment, claimant: Collection[str] = ()
    ) -> ResourceState:
        """``owner`` takes the assigned resources with their channels (updateState, Alg. 1).

        Reservations held by ids in ``claimant`` pass to ``owner``. Raises
        SpecificationError if the assignment conflicts with the state (a bug upstream).
        """
        ids = set(claimant) | {owner}
        res = list(self.resources)
        for name, channel in assignment:
            r = res[self._index[name]]
            others = r.owners - ids
            if r.out_of_service or (
                others and (r.channel is None or not r.channel.admits(channel))
            ):
                raise SpecificationError(
                    f"{owner} cannot take {name} as {channel}:"
                    f" held by {sorted(others)} as {r.channel}"
                )
            res[self._index[name]] = replace(
                r, owners=others | {owner}, channel=channel, locked=True
            )
        return ResourceState(tuple(res))

    def release(self, owner: str, names: Collection[str] | None = None) -> ResourceState:
        """``owner`` gives up ``names`` (default: everything it owns)."""
        res = []
        for r in self.resources:
            if owner in r.owners and (names is None or r.name in names):
                left = r.owners - {owner}
                r = replace(r, owners=left, channel=r.channel if left else None, locked=bool(left))
            res.append(r)
        return ResourceState(tuple(res))

    def transfer(
        self, owner: str, heir: str, names: Collection[str], channels: Mapping[str, Channel]
    ) -> ResourceState:
        """Hand ``names`` from ``owner`` to ``heir`` (a move handing on its resources, §III.B).

        ``channels`` gives the heir's channel per resource (default: exclusive). Other
        owners of a handed resource, if any, keep it only when the channel admits them.
        """
        res = []
        for r in self.resources:
            if owner in r.owners and r.name in names:
                ch = channels.get(r.name, Channel(Access.EXCLUSIVE, f"reserved for {heir}"))
                r = replace(
                    r, owners=frozenset({heir}) | (r.owners - {owner}), channel=ch, locked=True
                )
            res.append(r)
        return ResourceState(tuple(res))

    def violations(self) -> list[str]:
        """Broken invariants, as sentences (empty when consistent): for tests and checkers."""
        out = []
        for r in self.resources:
            if r.owners and not r.locked:
                out.append(f"{r.name} has owners {sorted(r.owners)} but is not locked")
            if len(r.owners) > 1 and (r.channel is None or r.channel.access is Access.EXCLUSIVE):
                out.append(f"{r.name} is exclusive but has owners {sorted(r.owners)}")
            if r.owners and r.channel is None:
                out.append(f"{r.name} has owners but no channel")
        return out

    def to_rows(self) -> list[dict[str, Any]]:
        """One plain dict per resource (for a factsheet or a log line)."""
        return [
            {
                "name": r.name,
                "type": r.type,
                "owners": sorted(r.owners),
                "n_owners": r.n_owners,
                "channel": str(r.channel) if r.channel else None,
                "locked": r.locked,
            }
            for r in self.resources
        ]


@dataclass(frozen=True)
class ResourceProfile:
    """What resources a kind of robot has (Fig. 2); ``initial_state`` is its idle state."""

    kind: str
    resources: tuple[Resource, ...]

    def initial_state(self) -> ResourceState:
        """All resources free except those the profile declares locked (out of service)."""
        return ResourceState(self.resources)

    def count(self, rtype: str) -> int:
        """How many resources of ``rtype`` are in service."""
        return sum(1 for r in self.resources if r.type == rtype and not r.locked)


PR2_RESOURCES: tuple[Resource, ...] = (
    Resource("left_gripper", ResourceType.GRIPPER),
    Resource("right_gripper", ResourceType.GRIPPER),
    Resource("base", ResourceType.BASE),
    Resource("head", ResourceType.HEAD),
)
"""The PR2's resources used in seed 004 (Fig. 2): two grippers, the base, the head."""


def pr2_profile() -> ResourceProfile:
    """The PR2 (seed 004 Fig. 2)."""
    return ResourceProfile("pr2", PR2_RESOURCES)


def resource_profile_from_dict(
    data: Mapping[str, Any] | str, *, where: str = "resources"
) -> ResourceProfile:
    """A profile from plain data: ``"pr2"``, or ``{kind, resources = [{name, type, locked?}]}``.

    Raises SpecificationError naming the key.
    """
    if isinstance(data, str):
        if data == "pr2":
            return pr2_profile()
        raise SpecificationError(f"{where}: unknown profile {data!r}; expected 'pr2' or a table")
    if not isinstance(data, Mapping):
        raise SpecificationError(f"{where}: expected a table or a profile name")
    kind = data.get("kind", "robot")
    rows = data.get("resources")
    if not isinstance(rows, list) or not rows:
        raise SpecificationError(f"{where}.resources: expected a non-empty list of tables")
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping) or not isinstance(row.get("name"), str):
            raise SpecificationError(f"{where}.resources[{i}]: needs a string 'name'")
        rtype = row.get("type")
        if not isinstance(rtype, str) or not rtype:
            raise SpecificationError(
                f"{where}.resources[{i}].type: expected a type such as 'gripper'"
            )
        out.append(Resource(row["name"], rtype, locked=bool(row.get("locked", False))))
    try:
        ResourceState(tuple(out))
    except SpecificationError as exc:
        raise SpecificationError(f"{where}: {exc}") from None
    return ResourceProfile(str(kind), tuple(out))
