"""Driver agents: processes bridging a robot SDK to the broker.

Drivers build on the agent runtime (``teamtree.agents.runtime``) and the SDK they
bridge; no agent kind imports a driver (kinds are looked up by name). The simulated
SDK's protocol and client live with the simulated world in ``teamtree.hardware``.
"""

from teamtree.drivers.base import DriverAgent, RunningCommand
from teamtree.drivers.changed_objects import merge_changed
from teamtree.drivers.sim_driver import SimDriverAgent

__all__ = ["DriverAgent", "RunningCommand", "SimDriverAgent", "merge_changed"]
