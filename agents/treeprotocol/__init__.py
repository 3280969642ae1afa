"""The shared task-tree protocol (docs/protocol.md, "Task trees"; docs/humans.md): what
every kind that works a shared THEN/AND/OR tree, and every observer of one, says and
reads on the wire, one declared msgspec Struct per body, encoded and decoded with the
same type both ways.

- ``peer_wire``: claims, claim replies, transitions (a seed 000 robot's, a multitask
  robot's leaves and units), snapshots, potentials, declared interest;
- ``decided_wire``: ``node.claim_decided``, a claim's outcome;
- ``dialog_wire``: the robot-human dialog and ``tom.belief``;
- ``mission_wire``: the ``mission.tree`` body; ``mission_config``: the tree of a
  config, for a process that needs it before it joins;
- ``peer_member``: a member's side of the peer rule (decode, check the sender, the
  roster and rate limits, feed the controller), shared by the kinds that run one.

Names load on first use (PEP 562): a robot imports the tree's wire codec only when it
publishes the tree, after it is ONLINE.
"""

from teamtree.broker.lazy import lazy_exports as _lazy_exports

_HOMES = {
    "decided_wire": (
        "ClaimDecidedWire",
        "claim_decided_from_wire",
        "claim_decided_to_wire",
        "lost_claim",
    ),
    "mission_config": ("mission_tree",),
    "mission_wire": (
        "MissionTreeBody",
        "MissionWireError",
        "TreeNodeWire",
        "decode_mission_tree",
        "mission_tree_body",
        "tree_from_body",
    ),
    "peer_member": ("PeerRuleMember", "claim_limits"),
    "peer_wire": (
        "LeafSnapshotWire",
        "LeafTransitionWire",
        "PeerWireError",
        "TransitionWire",
        "UnitTransitionWire",
        "transition_to_wire",
    ),
}

__all__, __getattr__, __dir__ = _lazy_exports(__name__, _HOMES)
