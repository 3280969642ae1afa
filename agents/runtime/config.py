"""Team configs: TOML files validated on load.

Every error is a ConfigError naming the file, the key and the expected form::

    [team]                 name (id), broker (URL, optional), broker_kind
    [runtime]              tick_hz, heartbeat_s, keepalive_s, request_timeout_s,
                           cluster ("auto", true, false), resync_wait_s,
                           max_clock_skew_s, nice
    [mission]              kind, timeout_s, plus mission-specific keys
    [[agents]]             id, kind, role ("member" or "service"), required (a
                           service's: see `AgentSpec.optional`), plus kind params
    [access]               operators, persons, observers: broker logins by role

Members are the agents whose exit ends the mission; services (world, allocator,
recorder) run alongside and are stopped when the members are done. An observer service
(recorder, monitor, web) is optional unless its entry says ``required = true``: the
mission goes on without it when it exits early.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from teamtree.broker import ConfigError, TopicError
from teamtree.broker.acl import DEFAULT_OBSERVERS, OBSERVER_KINDS, role_of_kind
from teamtree.broker.broker_kind import BrokerKind
from teamtree.broker.endpoint import Endpoint, parse_endpoint
from teamtree.broker.topics import validate_id

#: "on_call" agents are not started by ``run``: a mission queue starts them per mission
ROLES = ("member", "service", "on_call")


@dataclass(frozen=True, slots=True)
class RuntimeSettings:
    """Timing of every agent's loops."""

    tick_hz: float = 10.0
    heartbeat_s: float = 1.0
    keepalive_s: int = 5
    request_timeout_s: float = 5.0
    #: the broker lacks mosquitto's retained-to-wildcards and $share (a RabbitMQ
    #: cluster): re-sync state on join, own replica requests by hash, one client id per
    #: node. None ("auto"): when the broker is given as a list of URLs.
    cluster: bool | None = None
    #: how long a joining agent collects teammates' state on a cluster before it acts
    resync_wait_s: float = 1.0
    #: a peer whose clock differs from this agent's by more than this is named in a
    #: ``clock.skew`` warning (once per peer per minute); 0: never
    max_clock_skew_s: float = 5.0
    #: the nice value every process of the team runs at (-20 to 19; 0: the default);
    #: below 0 puts the team ahead of other work on its machine (agents/runtime/priority.py)
    nice: int = 0


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """One `[[agents]]` entry: who the agent is and its kind-specific parameters."""

    id: str
    kind: str
    role: str = "member"
    params: dict[str, Any] = field(default_factory=dict)
    #: a service's ``required`` key (None: not given; see `optional`)
    required: bool | None = None

    @property
    def optional(self) -> bool:
        """A service the mission goes on without when it exits early: an observer
        (recorder, monitor, web) unless its entry says ``required = true``. Every other
        agent is required: a mission cannot go on without its world, drivers or members."""
        return self.role == "service" and self.kind in OBSERVER_KINDS and not self.required


@dataclass(frozen=True, slots=True)
class MissionSpec:
    """The `[mission]` table."""

    kind: str = "none"
    timeout_s: float = 120.0
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AccessSpec:
    """The ``[access]`` table: who may do what at the broker (``teamtree acl``).

    `operators` may dispatch, cancel and disturb (people of the config, or extra
    logins such as an operator's console); `persons` are extra people's logins
    (the config's human kinds are persons already); `observers` are read-only logins,
    one per observer process that runs at the same time. `declared`: the config has
    an ``[access]`` table, so services enforce the operator role."""

    operators: tuple[str, ...] = ()
    persons: tuple[str, ...] = ()
    observers: tuple[str, ...] = DEFAULT_OBSERVERS
    declared: bool = False


@dataclass(frozen=True, slots=True)
class TeamConfig:
    """A whole team config as loaded from a file."""

    path: Path
    team: str
    broker: Endpoint | None
    broker_kind: BrokerKind
    runtime: RuntimeSettings
    mission: MissionSpec
    agents: tuple[AgentSpec, ...]
    access: AccessSpec = AccessSpec()

    def agent(self, agent_id: str) -> AgentSpec:
        """The spec of `agent_id`; raises ConfigError listing the ids there are."""
        for spec in self.agents:
            if spec.id == agent_id:
                return spec
        known = ", ".join(s.id for s in self.agents) or "none"
        raise ConfigError(
            f"no agent {agent_id!r} in this config (agents: {known})",
            path=str(self.path),
            key="agents",
        )

    @property
    def members(self) -> tuple[AgentSpec, ...]:
        return tuple(s for s in self.agents if s.role == "member")

    @property
    def services(self) -> tuple[AgentSpec, ...]:
        return tuple(s for s in self.agents if s.role == "service")

    def user_roles(self) -> dict[str, str]:
        """Every broker login of this config and its role (robot, driver, person,
        operator, observer): the agents by kind, then ``[access]``."""
        roles = {spec.id: role_of_kind(spec.kind) for spec in self.agents}
        roles |= {name: "person" for name in self.access.persons}
        roles |= {name: "operator" for name in self.access.operators}
        for name in self.access.observers:
            roles.setdefault(name, "observer")
        return roles


class _Reader:
    """Typed access to one TOML table that reports errors with file and key."""

    def __init__(self, path: Path, prefix: str, table: Any):
        self.path = path
        self.prefix = prefix
        if not isinstance(table, dict):
            raise ConfigError(
                f"must be a table, got {type(table).__name__}", path=str(path), key=prefix
            )
        self.table = dict(table)

    def _key(self, name: str) -> str:
        return f"{self.prefix}.{name}" if self.prefix else name

    def error(self, name: str, message: str) -> ConfigError:
        return ConfigError(message, path=str(self.path), key=self._key(name))

    def take(self, name: str, kind: type | tuple[type, ...], default: Any, what: str) -> Any:
        if name not in self.table:
            if default is _REQUIRED:
                raise self.error(name, f"is missing; expected {what}")
            return default
        value = self.table.pop(name)
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise self.error(name, f"is {value!r}; expected {what}")
        if not isinstance(value, kind):
            raise self.error(name, f"is {value!r} ({type(value).__name__}); expected {what}")
        return value

    def positive(self, name: str, default: float, what: str = "a positive number") -> float:
        value = self.take(name, (int, float), default, what)
        if not value > 0 or not math.isfinite(value):  # NaN compares false to anything
            raise self.error(name, f"is {value!r}; expected {what}")
        return float(value)

    def whole(self, name: str, default: int, minimum: int, what: str) -> int:
        """An integer >= `minimum` (a float with a fraction is refused, not truncated)."""
        value = self.take(name, (int, float), default, what)
        if (isinstance(value, float) and not value.is_integer()) or value < minimum:
            raise self.error(name, f"is {value!r}; expected {what}")
        return int(value)

    def ident(self, name: str, default: Any = None) -> str:
        value = self.take(name, str, _REQUIRED if default is None else default, "an id string")
        try:
            return validate_id(value, "id")
        except TopicError as exc:
            raise self.error(name, exc.reason) from None

    def no_extras(self) -> None:
        if self.table:
            names = ", ".join(sorted(self.table))
            raise ConfigError(
                f"unknown key(s) {names}; remove or correct them",
                path=str(self.path),
                key=self.prefix or names,
            )


_REQUIRED = object()


def check_numbers(table: Any, path: Path, prefix: str) -> None:
    """ConfigError naming the key for a number no table may hold: NaN or infinity
    anywhere (TOML, JSON and msgpack all carry them; every comparison with NaN is
    false, so a range check lets it through), or a negative number of seconds (a
    key ending in ``_s``). Walks nested tables and arrays without recursion."""
    stack: list[tuple[str, Any]] = [(prefix, table)]
    while stack:
        key, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((f"{key}.{k}" if key else str(k), v) for k, v in value.items())
        elif isinstance(value, list | tuple):
            stack.extend((f"{key}[{i}]", v) for i, v in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"is {value}; give a finite number", path=str(path), key=key)
        elif (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and value < 0
            and key.endswith("_s")
        ):
            raise ConfigError(
                f"is {value!r}; a number of seconds cannot be negative", path=str(path), key=key
            )


def spec_reader(spec: AgentSpec, config: TeamConfig) -> _Reader:
    """A typed reader over an agent entry's kind-specific keys, for ``params_from_config``."""
    index = config.agents.index(spec)
    return _Reader(config.path, f"agents[{index}]", spec.params)


_TOP_LEVEL = ("team", "runtime", "mission", "agents", "access")

#: the keys each mission kind reads from ``[mission]`` (besides kind and timeout_s);
#: a kind not listed here (a plugin's) is not checked. Extend it when a kind grows a key.
MISSION_KEYS: dict[str, frozenset[str]] = {
    "none": frozenset(),
    "hello": frozenset(),
    "tasktree": frozenset({"tree"}),
    "ltl": frozenset({"scenario", "formula", "objective", "time_factor"}),
    "kitting": frozenset({"time_factor", "pattern"}),
    "multitask": frozenset({"objects", "start", "tree", "robot", "durations", "tolerance"}),
    "factory": frozenset(
        {
            "method",
            "comm_range",
            "ttl",
            "window_s",
            "close_early",
            "retry_s",
            "hold_s",
            "status_s",
            "silence_s",
            "max_rounds",
            "drain_per_s",
            "favor_loss",
            "loss_seed",
            "jobs",
            "random_jobs",
        }
    ),
}


def _check_mission_keys(path: Path, kind: str, params: dict[str, Any]) -> None:
    """ConfigError naming file, table and key for a key `kind` does not read."""
    known = MISSION_KEYS.get(kind)
    if known is None:
        return
    unknown = sorted(set(params) - known)
    if unknown:
        expected = ", ".join(sorted({"kind", "timeout_s", *known}))
        raise ConfigError(
            f"unknown key(s) {', '.join(unknown)} for a {kind!r} mission; "
            f"remove or correct them (expected: {expected})",
            path=str(path),
            key=f"mission.{unknown[0]}",
        )


#: the last config parsed, with its path and text: a command reads its config twice
#: (for the broker check, then to run), and a 50-robot config took ~3 ms to parse
_LAST: tuple[str, str, TeamConfig] | None = None


def load_config(path: str | Path) -> TeamConfig:
    """Read and validate a team config. Raises ConfigError (file, key, fix) on any problem.

    The same file with the same text gives the same (frozen) TeamConfig without a parse."""
    global _LAST
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(
            "file not found; give the path of a team config (.toml)", path=str(path)
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", path=str(path)) from None
    if _LAST is not None and _LAST[0] == str(path) and _LAST[1] == text:
        return _LAST[2]
    config = parse_config(read_toml(text, path), path)
    _LAST = (str(path), text, config)
    return config


def read_toml(text: str, path: str | Path) -> dict[str, Any]:
    """`text` as TOML; ConfigError naming `path` when it is not, or nests so deep that
    the parser (recursive) gives up."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}", path=str(path)) from None
    except RecursionError:
        raise ConfigError(
            "arrays or tables nested too deep to read; flatten them", path=str(path)
        ) from None


def parse_mission(table: Any, path: Path, prefix: str = "mission") -> MissionSpec:
    """Validate a ``[mission]`` table (from a config, or a mission submitted to a team)."""
    check_numbers(table, path, prefix)
    ms = _Reader(path, prefix, table)
    mission = MissionSpec(
        kind=ms.take("kind", str, "none", "a mission kind string"),
        timeout_s=ms.positive("timeout_s", 120.0, "a positive number of seconds"),
        params=ms.table,
    )
    _check_mission_keys(path, mission.kind, mission.params)
    return mission


def parse_config(data: dict[str, Any], path: Path) -> TeamConfig:
    """Validate an already-parsed TOML document (see `load_config`)."""
    top = _Reader(path, "", data)
    unknown = sorted(set(top.table) - set(_TOP_LEVEL))
    if unknown:
        raise ConfigError(
            f"unknown top-level table(s) {', '.join(unknown)}; expected {', '.join(_TOP_LEVEL)}",
            path=str(path),
            key=unknown[0],
        )
    team = _Reader(path, "team", top.take("team", dict, _REQUIRED, "a [team] table with a name"))
    name = team.ident("name")
    broker_url = team.take(
        "broker",
        (str, list),
        None,
        "a broker URL like mqtt://127.0.0.1:1883, or a list of them (the nodes of a cluster)",
    )
    try:
        broker = parse_endpoint(broker_url, key="team.broker") if broker_url else None
    except ConfigError as exc:
        raise ConfigError(
            str(exc).removeprefix("[team.broker] "), path=str(path), key="team.broker"
        ) from None
    kind_name = team.take("broker_kind", str, "auto", "one of auto, mosquitto, embedded")
    try:
        broker_kind = BrokerKind(kind_name)
    except ValueError:
        raise team.error(
            "broker_kind", f"is {kind_name!r}; expected one of auto, mosquitto, embedded"
        ) from None
    team.no_extras()

    rt = _Reader(path, "runtime", top.take("runtime", dict, {}, "a [runtime] table"))
    runtime = RuntimeSettings(
        tick_hz=rt.positive("tick_hz", 10.0, "a positive number of ticks per second"),
        heartbeat_s=rt.positive("heartbeat_s", 1.0, "a positive number of seconds"),
        keepalive_s=_keepalive(rt),
        request_timeout_s=rt.positive("request_timeout_s", 5.0, "a positive number of seconds"),
        cluster=_cluster(rt),
        resync_wait_s=rt.positive("resync_wait_s", 1.0, "a positive number of seconds"),
        max_clock_skew_s=_max_clock_skew(rt),
        nice=_nice(rt),
    )
    rt.no_extras()

    mission = parse_mission(top.take("mission", dict, {}, "a [mission] table"), path)

    entries = top.take("agents", list, _REQUIRED, "an array of [[agents]] tables")
    if not entries:
        raise ConfigError(
            "is empty; add at least one [[agents]] table", path=str(path), key="agents"
        )
    agents: list[AgentSpec] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        reader = _Reader(path, f"agents[{index}]", entry)
        check_numbers(entry, path, f"agents[{index}]")
        agent_id = reader.ident("id")
        if agent_id in seen:
            raise reader.error("id", f"{agent_id!r} is used twice; agent ids must be unique")
        seen.add(agent_id)
        kind = reader.take("kind", str, _REQUIRED, "an agent kind such as 'hello'")
        role = reader.take("role", str, "member", "'member', 'service' or 'on_call'")
        if role not in ROLES:
            raise reader.error("role", f"is {role!r}; expected 'member', 'service' or 'on_call'")
        required = _required(reader, kind, role)
        agents.append(AgentSpec(agent_id, kind, role, reader.table, required))
    access = _access(path, top.take("access", dict, None, "an [access] table"), agents)
    return TeamConfig(path, name, broker, broker_kind, runtime, mission, tuple(agents), access)


def _access(path: Path, table: dict[str, Any] | None, agents: list[AgentSpec]) -> AccessSpec:
    """Validate ``[access]``: lists of logins; an operator must be a person or a login
    of its own (robots, drivers and watchers act only as themselves)."""
    if table is None:
        return AccessSpec()
    reader = _Reader(path, "access", table)

    def logins(key: str, default: tuple[str, ...]) -> tuple[str, ...]:
        names = reader.take(key, list, list(default), "a list of login names")
        for name in names:
            try:
                validate_id(name, "login")
            except TopicError as exc:
                raise reader.error(key, exc.reason) from None
        if len(set(names)) != len(names):
            raise reader.error(key, "names a login twice")
        return tuple(names)

    access = AccessSpec(
        operators=logins("operators", ()),
        persons=logins("persons", ()),
        observers=logins("observers", DEFAULT_OBSERVERS),
        declared=True,
    )
    reader.no_extras()
    kinds = {spec.id: spec.kind for spec in agents}
    for key in ("operators", "persons", "observers"):
        for name in getattr(access, key):
            role = role_of_kind(kinds[name]) if name in kinds else None
            if role is not None and role != "person":
                raise reader.error(
                    key,
                    f"names {name!r}, a {kinds[name]} agent (role {role}); only people "
                    "(kinds human, kitting_human) or logins that are no agent of the "
                    "config can be given a role here",
                )
    both = set(access.operators) & (set(access.observers) | set(access.persons))
    if both:
        raise reader.error(
            "operators", f"{sorted(both)[0]!r} is also listed as a person or an observer; "
            "give each login one role",
        )  # fmt: skip
    return access


def _required(reader: _Reader, kind: str, role: str) -> bool | None:
    """``required``: true or false, on a service's entry only; ``false`` only for an
    observer kind (the mission needs every other service)."""
    required = reader.take("required", bool, None, "true or false")
    if required is None:
        return None
    if role != "service":
        raise reader.error(
            "required",
            f"is given for a {role!r}; only a service's entry takes it (a member is "
            "always required: the mission ends when every member is done); remove it",
        )
    if not required and kind not in OBSERVER_KINDS:
        kinds = ", ".join(sorted(OBSERVER_KINDS))
        raise reader.error(
            "required",
            f"is false for a {kind!r} service; only an observer ({kinds}) can be optional "
            "(the mission cannot go on without the others); remove it",
        )
    return required


def _max_clock_skew(rt: _Reader) -> float:
    """How far a peer's clock may be off before a warning names it: 0 or more s."""
    what = "0 (no warning) or more seconds, e.g. 5"
    value = rt.take("max_clock_skew_s", (int, float), 5.0, what)
    if isinstance(value, bool) or not 0 <= value < float("inf"):
        raise rt.error("max_clock_skew_s", f"is {value!r}; expected {what}")
    return float(value)


def _nice(rt: _Reader) -> int:
    """The team's nice value: a whole number from -20 (first) to 19 (last), 0 unchanged."""
    what = "a whole number from -20 (ahead of other work) to 19 (behind it); 0: unchanged"
    value = rt.whole("nice", 0, -20, what)
    if value > 19:
        raise rt.error("nice", f"is {value!r}; expected {what}")
    return value


def _keepalive(rt: _Reader) -> int:
    """MQTT keepalive: whole seconds, at least 1 (0 would turn the Last Will off: a
    crash would never be noticed)."""
    return rt.whole(
        "keepalive_s", 5, 1, "a whole number of seconds, 1 or more (MQTT counts whole seconds)"
    )


def _cluster(rt: _Reader) -> bool | None:
    """``cluster``: true, false, or "auto" (None: decided by the broker list)."""
    value = rt.take("cluster", (bool, str), "auto", 'true, false or "auto"')
    if value == "auto":
        return None
    if isinstance(value, str):
        raise rt.error("cluster", f'is {value!r}; expected true, false or "auto"')
    return value


_ENTRY = re.compile(r"agents\[(\d+)\]")


def by_agent_id(exc: ConfigError) -> str:
    """`exc` as a person reads it: an ``[[agents]]`` entry named by its id (``[pr2.kind]``)
    rather than its place in the file (``[agents[0].kind]``), when the file names one.
    ``exc.key`` keeps the place, for programs."""
    text = str(exc)
    match = _ENTRY.match(exc.key or "")
    if match is None or not exc.path:
        return text
    try:
        entries = tomllib.loads(Path(exc.path).read_text()).get("agents")
        agent_id = entries[int(match[1])]["id"]
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return text
    if not isinstance(agent_id, str):
        return text
    shown = agent_id + (exc.key or "")[match.end() :]
    return text.replace(f"[{exc.key}]", f"[{shown}]", 1)
