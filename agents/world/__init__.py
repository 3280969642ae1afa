"""The simulated world as a service: the stand-in for real robots, served over ZeroMQ."""

from teamtree.agents.world.wire import MoveObject, Violation, WorldWireError, decode_move_object
from teamtree.agents.world.world_agent import WorldAgent

__all__ = [
    "MoveObject",
    "Violation",
    "WorldAgent",
    "WorldWireError",
    "decode_move_object",
]
