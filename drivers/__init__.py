"""Driver agents: processes bridging a robot SDK to the broker.

The simulated SDK first: ``sim_protocol`` (msgpack over ZeroMQ ROUTER/DEALER),
``SimClient`` (its asyncio client) and ``SimDriverAgent`` (kind ``sim_driver``).
"""

# The agents package registers the driver kinds (agents.kinds imports sim_driver), so
# it is imported first: whichever package a program imports first, no cycle breaks.
import teamtree.agents  # noqa: F401  # isort: skip
from teamtree.drivers.sim_client import SimClient
from teamtree.drivers.sim_driver import SimDriverAgent
from teamtree.drivers.sim_protocol import MAX_MESSAGE, OPS, PROTOCOL_VERSION, serve

__all__ = ["MAX_MESSAGE", "OPS", "PROTOCOL_VERSION", "SimClient", "SimDriverAgent", "serve"]
