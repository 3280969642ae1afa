"""Members started by hand (``teamtree agent``, ``attach``) wait for the team's services.

``teamtree run`` starts the members only once every service (world, drivers, recorder,
allocator) has announced itself ONLINE, so the recording holds every behaviour from
the first claim. A member started by hand does the same: before it connects as an
agent, a passive client (no presence, never a team member) watches the team's
presence until every service of the config is online, printing what it still waits
for, and gives up after a bounded wait with an error naming the missing services.
An optional observer (``AgentSpec.optional``: a recorder not marked ``required``) is
waited for only ``OPTIONAL_GRACE_S`` longer than the others: a dead recorder delays a
member by that much, with one line saying it starts without it, and never stops it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from typing import Any

from teamtree.agents.runtime.config import AgentSpec, TeamConfig
from teamtree.broker import TeamtreeError
from teamtree.broker.endpoint import Endpoint

#: service kinds a member never needs before its first claim (they start members)
NOT_AWAITED = frozenset({"mission_queue"})
#: seconds between progress lines while waiting
PROGRESS_EVERY_S = 5.0
#: seconds a member waits for optional observers once every other service is online
OPTIONAL_GRACE_S = 10.0


def optional_services(config: TeamConfig) -> frozenset[str]:
    """The services of `config` a member starts without, after a short wait."""
    return frozenset(s.id for s in config.services if s.optional)


def services_to_await(config: TeamConfig, spec: AgentSpec) -> list[str]:
    """The services `spec` waits for: every service of the config but other members'
    drivers (none for a service). Another robot's driver starts with that robot, which
    may join later (``attach``): waiting for it would hold this member back for good."""
    if spec.role == "service":
        return []
    own = spec.params.get("driver")
    others = {m.params.get("driver") for m in config.members if m.id != spec.id} - {own}
    return sorted(
        s.id
        for s in config.services
        if s.kind not in NOT_AWAITED and s.id != spec.id and s.id not in others
    )


async def wait_for_services(
    endpoint: Endpoint,
    team: str,
    services: list[str],
    *,
    within: float,
    say: Callable[[str], None],
    tls_context: Any = None,
    credentials: dict[str, str] | None = None,
    optional: Collection[str] = (),
    mission_id: str | None = None,
) -> None:
    """Return once every one of `services` is ONLINE in `team` (of mission `mission_id`
    or without one, when given: another mission's presence, e.g. replayed, does not
    count); TeamtreeError naming the missing ones after `within` seconds (ConnectError
    if the broker is gone). Those also in `optional` are waited for at most
    ``OPTIONAL_GRACE_S`` after the others."""
    if not services:
        return
    # the observer (and statistics, which it uses) only when there is something to
    # await: a member of a team without services starts without them
    from teamtree.agents.observers.monitor import TeamObserver

    observer = TeamObserver(
        endpoint,
        team,
        sys_topics=False,
        client_prefix="svcwait",
        tls_context=tls_context,
        mission_id=mission_id,
        **(credentials or {}),
    )
    loop = asyncio.get_running_loop()
    async with observer:
        await observer.wait_connected(min(within, 10.0) if within > 0 else 10.0)
        start = loop.time()
        said = -PROGRESS_EVERY_S
        others_online_at: float | None = None  # when only optional ones were missing
        while True:
            online = set(observer.state.snapshot()["online"])
            missing = [s for s in services if s not in online]
            if not missing:
                if said >= 0:  # we said we were waiting: say the wait is over
                    say(f"services online: {', '.join(services)}")
                return
            waited = loop.time() - start
            if all(s in optional for s in missing):
                others_online_at = waited if others_online_at is None else others_online_at
                if waited >= within or waited - others_online_at >= OPTIONAL_GRACE_S:
                    say(
                        f"starting without the optional observer(s) {', '.join(missing)} "
                        f"(not online after {waited:.0f} s): they miss this member's messages "
                        "until they are back"
                    )
                    return
            if waited >= within:
                raise TeamtreeError(
                    f"the team's services are not online after {within:g} s: "
                    f"{', '.join(missing)} (online in team {team!r} at {endpoint.url}: "
                    f"{', '.join(sorted(online)) or 'none'}). Start them first (teamtree run "
                    "with this config, or docker compose up), check --broker and --team, or "
                    "pass --wait-services 0 to start without them."
                )
            # the first line after half a second: kept presences arrive in a few ms
            if waited >= 0.5 and waited - said >= PROGRESS_EVERY_S:
                say(
                    f"waiting for the team's services before the first claim: "
                    f"{', '.join(missing)} ({waited:.0f}/{within:g} s)"
                )
                said = waited
            await asyncio.sleep(0.1)
