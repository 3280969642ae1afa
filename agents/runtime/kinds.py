"""The agent kinds a config can name, and how to build one from a config entry."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.config import AgentSpec, TeamConfig
from teamtree.broker import ConfigError
from teamtree.broker.endpoint import Endpoint

#: kind -> "module:Class". Modules are imported only when their kind is used, so an
#: agent process pays for its own planner's imports (scipy, gurobipy...) and no other's.
_KIND_PATHS: dict[str, str] = {
    "allocator": "teamtree.agents.allocation.allocator:AllocatorAgent",
    "cobot": "teamtree.agents.allocation.kitting:CobotAgent",
    "echo": "teamtree.agents.runtime.echo:EchoAgent",
    "factory_robot": "teamtree.agents.capability.factory:FactoryRobot",
    "hello": "teamtree.agents.runtime.hello:HelloAgent",
    "human": "teamtree.agents.humans.human:HumanAgent",
    "job_source": "teamtree.agents.capability.factory:JobSource",
    "kitting_human": "teamtree.agents.allocation.kitting:KittingHumanAgent",
    "ltl_planner": "teamtree.agents.ltl.planner:LtlPlannerAgent",
    "ltl_robot": "teamtree.agents.ltl.robot:LtlRobotAgent",
    "multitask_robot": "teamtree.agents.multitask.robot:MultitaskRobot",
    "recorder": "teamtree.agents.observers.recorder:RecorderAgent",
    "robot": "teamtree.agents.tasktree.robot:RobotAgent",
    "sim_driver": "teamtree.drivers.sim_driver:SimDriverAgent",
    "world": "teamtree.agents.world.world_agent:WorldAgent",
}


class AgentKinds(Mapping[str, type[Agent]]):
    """The agent kinds a config can name; a class is imported on first lookup."""

    def __init__(self, paths: Mapping[str, str]):
        self._paths = dict(paths)
        self._loaded: dict[str, type[Agent]] = {}

    def __getitem__(self, kind: str) -> type[Agent]:
        if kind not in self._loaded:
            module, _, name = self._paths[kind].partition(":")
            cls = getattr(importlib.import_module(module), name)
            if getattr(cls, "kind", None) != kind:
                raise LookupError(f"{self._paths[kind]} declares kind {cls.kind!r}, not {kind!r}")
            self._loaded[kind] = cls
        return self._loaded[kind]

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


AGENT_KINDS = AgentKinds(_KIND_PATHS)


def agent_class(spec: AgentSpec, config: TeamConfig) -> type[Agent]:
    """The class for `spec.kind`; raises ConfigError listing the known kinds."""
    try:
        return AGENT_KINDS[spec.kind]
    except KeyError:
        index = config.agents.index(spec)
        known = ", ".join(sorted(AGENT_KINDS))
        raise ConfigError(
            f"unknown agent kind {spec.kind!r}; expected one of: {known}",
            path=str(config.path),
            key=f"agents[{index}].kind",
        ) from None


def validate_kinds(config: TeamConfig) -> None:
    """Check every entry's kind and kind-specific keys. Raises ConfigError."""
    for spec in config.agents:
        agent_class(spec, config).params_from_config(spec, config)


def apply_overrides(config: TeamConfig, overrides: dict[str, Any]) -> TeamConfig:
    """Set `overrides` (e.g. ``{"metric": "distance"}``) on every agent entry whose kind
    declares the key overridable; other entries are left alone."""
    if not overrides:
        return config
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
