"""Seed 000 robots (Nicolescu et al., "Simulation theory of mind for heterogeneous human-
robot teams"): the peer rule over a shared task tree.

Names load on first use (PEP 562): a robot process imports the mission tree's wire
codec only when it publishes the tree, after it is ONLINE.
"""

from teamtree.broker.lazy import lazy_exports as _lazy_exports

_HOMES = {
    "mission_wire": (
        "MissionTreeBody",
        "MissionWireError",
        "TreeNodeWire",
        "decode_mission_tree",
        "mission_tree_body",
        "tree_from_body",
    ),
    "peer_member": ("PeerRuleMember", "claim_limits"),
    "robot": ("RobotAgent", "mission_tree"),
}

__all__, __getattr__, __dir__ = _lazy_exports(__name__, _HOMES)
