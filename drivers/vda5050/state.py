"""Reading an AGV's ``state`` message as the progress of one order (pure: no I/O).

``assess(order, state)`` answers what the state says of the order we sent:

- ``rejected`` -- an entry of ``errors`` references our ``orderId`` (or, for an update,
  our ``orderUpdateId``) on topic ``order`` while the state does not carry our update:
  the AGV refused it; the reason is the AGV's ``errorType: errorDescription``.
- ``failed`` -- one of our actions is ``FAILED`` (its ``resultDescription`` and any
  error naming its ``actionId`` are the reason);
- ``finished`` -- the state carries our update, none of our nodes or edges is left in
  ``nodeStates``/``edgeStates`` and every one of our actions is ``FINISHED``;
- ``accepted`` -- the state carries our update (``orderId`` equal, ``orderUpdateId``
  at least ours) and none of the above;
- ``None`` -- nothing about our order yet.

Choice: VDA 5050 leaves open how an AGV ties an order error to the order; we match
``errorReferences`` ``orderId``/``orderUpdateId`` (what vda-5050-lib and the standard's
examples send) and, as a fallback, ``headerId`` of the order message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from teamtree.drivers.vda5050.order import SentOrder

ACCEPTED, REJECTED, FAILED, FINISHED = "accepted", "rejected", "failed", "finished"


@dataclass(frozen=True)
class Verdict:
    """What a state says of one order: ``status`` and, when it failed, ``reason``."""

    status: str
    reason: str = ""


def _refs(error: Mapping[str, Any]) -> dict[str, str]:
    refs = error.get("errorReferences") or []
    return {
        str(r.get("referenceKey")): str(r.get("referenceValue"))
        for r in refs
        if isinstance(r, Mapping)
    }


def error_text(error: Mapping[str, Any]) -> str:
    """``errorType: errorDescription`` of one state error (the AGV's own words)."""
    kind = error.get("errorType", "error")
    text = error.get("errorDescription") or ""
    return f"{kind}: {text}" if text else str(kind)


def carries(order: SentOrder, state: Mapping[str, Any]) -> bool:
    """Whether the state runs (or ran) our order update or a later one of it."""
    if state.get("orderId") != order.order_id:
        return False
    update = state.get("orderUpdateId")
    return isinstance(update, int) and update >= order.order_update_id


def assess(
    order: SentOrder, state: Mapping[str, Any], header_id: int | None = None
) -> Verdict | None:
    """What `state` says of `order` (see the module docstring)."""
    errors = [e for e in state.get("errors") or [] if isinstance(e, Mapping)]
    ours = carries(order, state)
    if not ours:
        for error in errors:
            refs = _refs(error)
            if refs.get("topic", "order") != "order":
                continue
            same_order = refs.get("orderId") == order.order_id and refs.get(
                "orderUpdateId", str(order.order_update_id)
            ) == str(order.order_update_id)
            same_header = header_id is not None and refs.get("headerId") == str(header_id)
            if same_order or (same_header and "orderId" not in refs):
                return Verdict(REJECTED, error_text(error))
        return None
    action_ids = {a for a, _ in order.actions}
    statuses: dict[str, Mapping[str, Any]] = {}
    for action in state.get("actionStates") or []:
        if isinstance(action, Mapping) and action.get("actionId") in action_ids:
            statuses[action["actionId"]] = action
    for action_id, action_type in order.actions:
        st = statuses.get(action_id)
        if st is not None and st.get("actionStatus") == "FAILED":
            reason = f"action {action_type} failed"
            if st.get("resultDescription"):
                reason += f": {st['resultDescription']}"
            for error in errors:
                if _refs(error).get("actionId") == action_id:
                    reason += f" ({error_text(error)})"
            return Verdict(FAILED, reason)
    nodes = {(n.get("nodeId"), n.get("sequenceId")) for n in _items(state, "nodeStates")}
    edges = {(e.get("edgeId"), e.get("sequenceId")) for e in _items(state, "edgeStates")}
    pending_nodes = any(n in nodes for n in order.nodes)
    pending_edges = any(e in edges for e in order.edges)
    actions_done = all(
        statuses.get(a, {}).get("actionStatus") == "FINISHED" for a, _ in order.actions
    )
    if not pending_nodes and not pending_edges and actions_done:
        return Verdict(FINISHED)
    return Verdict(ACCEPTED)


def _items(state: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    return [x for x in state.get(key) or [] if isinstance(x, Mapping)]


def new_errors(before: list[Any], state: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The state's errors that were not in `before` (to log each once)."""
    return [e for e in state.get("errors") or [] if isinstance(e, Mapping) and e not in before]
