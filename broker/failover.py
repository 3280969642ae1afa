"""Which node of a clustered broker a connection uses, and where it goes next.

An endpoint with fallbacks names the nodes of one broker cluster. Each client starts
on the node picked by a stable hash of its client id, so the agents of a team spread
over the nodes without any configuration (a single URL behaves as before), and on
losing its node, or failing to reach it, moves on to the next one in the list.
"""

from __future__ import annotations

import zlib

from teamtree.broker.endpoint import Endpoint


class NodeRing:
    """The nodes of one endpoint, with the one in use."""

    def __init__(self, endpoint: Endpoint, client_id: str):
        self.nodes = endpoint.nodes
        self.index = zlib.crc32(client_id.encode()) % len(self.nodes)
        self.moves = 0

    @property
    def current(self) -> Endpoint:
        """The node to connect to now."""
        return self.nodes[self.index]

    def advance(self) -> Endpoint:
        """Move to the next node (a no-op with one node); returns it."""
        if len(self.nodes) > 1:
            self.index = (self.index + 1) % len(self.nodes)
            self.moves += 1
        return self.current
