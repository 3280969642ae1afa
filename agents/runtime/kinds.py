"""The agent kinds a config can name, and how to build one from a config entry."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.config import AgentSpec, TeamConfig
from teamtree.agents.runtime.registry import KindRegistry, UnknownKindError
from teamtree.broker import ConfigError
from teamtree.broker.endpoint import Endpoint

#: kind -> class, from the entry points of group ``teamtree.agent_kinds`` (built-in kinds
#: are declared in pyproject.toml like a plugin's); a kind's module is imported on lookup.
AGENT_KINDS = KindRegistry()


def agent_class(spec: AgentSpec, config: TeamConfig) -> type[Agent]:
    """The class for `spec.kind`; raises ConfigError listing the known kinds."""
    try:
        return AGENT_KINDS[spec.kind]
    except (UnknownKindError, LookupError) as exc:
        index = config.agents.index(spec)
        raise ConfigError(
            str(exc),
            path=str(config.path),
            key=f"agents[{index}].kind",
        ) from None


def validate_kinds(config: TeamConfig, only: str | None = None) -> None:
    """Check every entry's kind and kind-specific keys (with `only`, that one entry's).
    Raises ConfigError. An ``on_call`` entry's keys are checked when a mission queue
    starts it for a mission (its kind may need that mission, e.g. a robot its tree);
    here only its kind.

    ``teamtree agent --id X`` checks only X: every process of a team checking every
    entry imported every kind's module and read every robot's tree in each process,
    so a team's start-up grew with the square of its size (at 50 robots, 50 tree
    parses per agent). ``teamtree run`` checks them all before it starts any."""
    specs = config.agents if only is None else (config.agent(only),)
    for spec in specs:
        cls = agent_class(spec, config)
        if spec.role != "on_call":
            cls.params_from_config(spec, config)


def overridable_keys(config: TeamConfig) -> dict[str, list[str]]:
    """Key -> ids of the config's agents whose kind lets ``--set`` override it."""
    accepted: dict[str, list[str]] = {}
    for spec in config.agents:
        cls = AGENT_KINDS.get(spec.kind)
        for key in sorted(cls.overridable if cls is not None else ()):
            accepted.setdefault(key, []).append(spec.id)
    return accepted


def check_overrides(config: TeamConfig, overrides: dict[str, Any]) -> None:
    """ConfigError (exit 2) naming the first key of `overrides` that no agent of `config`
    accepts, with the keys each agent accepts: a ``--set`` nobody applies is a mistake
    (a misspelt key, or a key of another kind), never silently ignored."""
    accepted = overridable_keys(config)
    for key in overrides:
        if key not in accepted:
            offer = "; ".join(f"{k} ({', '.join(ids)})" for k, ids in sorted(accepted.items()))
            raise ConfigError(
                f"no agent of this config accepts {key!r}; "
                + (f"keys --set can change here: {offer}" if offer else "its kinds take no --set"),
                path=str(config.path),
                key=f"--set {key}",
            )


def apply_overrides(config: TeamConfig, overrides: dict[str, Any]) -> TeamConfig:
    """Set `overrides` (e.g. ``{"metric": "distance"}``) on every agent entry whose kind
    declares the key overridable; other entries are left alone. ConfigError when no
    entry accepts a key (``check_overrides``)."""
    if not overrides:
        return config
    check_overrides(config, overrides)
    agents = []
    for spec in config.agents:
        cls = AGENT_KINDS.get(spec.kind)
        keys = {k: v for k, v in overrides.items() if cls is not None and k in cls.overridable}
        agents.append(replace(spec, params={**spec.params, **keys}) if keys else spec)
    return replace(config, agents=tuple(agents))


def build_agent(
    config: TeamConfig, agent_id: str, *, endpoint: Endpoint, team: str | None = None, **extra: Any
) -> Agent:
    """Construct the agent `agent_id` of `config`. Raises ConfigError."""
    spec = config.agent(agent_id)
    cls = agent_class(spec, config)
    params = cls.params_from_config(spec, config)
    return cls(
        agent_id,
        team=team or config.team,
        endpoint=endpoint,
        runtime=config.runtime,
        **params,
        **extra,
    )
