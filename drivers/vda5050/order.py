"""VDA 5050 orders and instant actions built from stops (pure: no I/O, no clock).

An order's first node is where the AGV stands; each stop adds an edge and a node,
all released (base). Node sequence ids are even, edge ids odd, both counting on
within one ``orderId`` (VDA 5050 v2 §6.6).

When the AGV finished our previous order and still stands on its last node, the next
behaviour is sent as an *order update* (same ``orderId``, ``orderUpdateId`` + 1) whose
first node is that last node with its sequence id, so the AGV's order history stays
one chain. Otherwise (first order, after a cancel, a rejection or a reconnect) a new
``orderId`` starts at the AGV's ``lastNodeId`` and position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from teamtree.drivers.vda5050.site import Site, Stop


@dataclass(frozen=True)
class SentOrder:
    """What one order (or update) asked for, to follow it in the AGV's state."""

    order_id: str
    order_update_id: int
    nodes: tuple[tuple[str, int], ...]  # (nodeId, sequenceId) after the first
    edges: tuple[tuple[str, int], ...]
    actions: tuple[tuple[str, str], ...]  # (actionId, actionType)
    stations: tuple[str, ...]
    body: dict[str, Any] = field(compare=False, repr=False)

    @property
    def last_node(self) -> tuple[str, int]:
        return self.nodes[-1]


@dataclass
class OrderBuilder:
    """Numbers orders for one AGV: a fresh ``orderId`` per chain, updates within it."""

    prefix: str
    chains: int = 0
    last: SentOrder | None = None

    def build(
        self,
        stops: Sequence[Stop],
        site: Site,
        *,
        command_id: str,
        extend: bool,
        start_node: str,
        start_position: dict[str, Any] | None,
    ) -> SentOrder:
        """The order carrying `stops`. With `extend` (and a previous order) it is an
        update starting at the previous order's last node; otherwise a new order
        starting at `start_node` / `start_position` (the AGV's state)."""
        if not stops:
            raise ValueError("an order needs at least one stop")
        if extend and self.last is not None:
            order_id = self.last.order_id
            update_id = self.last.order_update_id + 1
            first_id, seq = self.last.last_node
            first_position = site.stations[self.last.stations[-1]].node_position()
        else:
            self.chains += 1
            order_id = f"{self.prefix}-{self.chains}"
            update_id = 0
            first_id, seq = start_node or "start", 0
            first_position = start_position
        first: dict[str, Any] = {
            "nodeId": first_id,
            "sequenceId": seq,
            "released": True,
            "actions": [],
        }
        if first_position is not None:
            first["nodePosition"] = dict(first_position)
        nodes, edges = [first], []
        node_keys, edge_keys, action_keys, stations = [], [], [], []
        previous = first_id
        for i, stop in enumerate(stops):
            station = site.stations[stop.station]
            edge_id = f"{previous}->{station.name}#{seq + 1}"
            edges.append(
                {
                    "edgeId": edge_id,
                    "sequenceId": seq + 1,
                    "released": True,
                    "startNodeId": previous,
                    "endNodeId": station.name,
                    "actions": [],
                }
            )
            edge_keys.append((edge_id, seq + 1))
            seq += 2
            actions = []
            for j, (kind, params) in enumerate(stop.actions):
                action_id = f"{command_id}/{i}.{j}/{kind}"
                actions.append(
                    {
                        "actionType": kind,
                        "actionId": action_id,
                        "blockingType": "HARD",
                        "actionParameters": [{"key": k, "value": v} for k, v in params.items()],
                    }
                )
                action_keys.append((action_id, kind))
            nodes.append(
                {
                    "nodeId": station.name,
                    "sequenceId": seq,
                    "released": True,
                    "nodePosition": station.node_position(),
                    "actions": actions,
                }
            )
            node_keys.append((station.name, seq))
            stations.append(station.name)
            previous = station.name
        body = {
            "orderId": order_id,
            "orderUpdateId": update_id,
            "nodes": nodes,
            "edges": edges,
        }
        sent = SentOrder(
            order_id,
            update_id,
            tuple(node_keys),
            tuple(edge_keys),
            tuple(action_keys),
            tuple(stations),
            body,
        )
        self.last = sent
        return sent

    def forget(self) -> None:
        """The next order starts a new chain (after a cancel, rejection or reconnect)."""
        self.last = None


def instant_action(kind: str, action_id: str, **params: Any) -> dict[str, Any]:
    """One instant action (``cancelOrder``, ``startPause``, ``stopPause``,
    ``factsheetRequest``...) with blocking type NONE; wrap it in ``{"actions": [...]}``."""
    action: dict[str, Any] = {"actionType": kind, "actionId": action_id, "blockingType": "NONE"}
    if params:
        action["actionParameters"] = [{"key": k, "value": v} for k, v in params.items()]
    return action
