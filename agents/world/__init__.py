"""The simulated world as a service: the stand-in for real robots, served over ZeroMQ."""

from teamtree.agents.world.world_agent import WorldAgent

__all__ = [
    "WorldAgent",
]
