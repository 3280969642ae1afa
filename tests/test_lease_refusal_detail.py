"""A driver's log of a ``lease_expired`` refusal says how old the command was and what
lease it carried: a stale command (age past its lease) reads apart from a misread
clock (a fresh command refused)."""

from __future__ import annotations

from teamtree.agents.runtime.behaviour_wire import ExecuteCommand, RenewCommand
from teamtree.broker import wall_ms
from teamtree.drivers.sim_driver import _lease_detail


def test_a_lease_refusal_names_the_commands_age_and_lease() -> None:
    sent = wall_ms() - 5_000
    execute = ExecuteCommand("c1", "PLACE", lease_ms=sent + 3_000, sent_ms=sent, clock="k")
    detail = _lease_detail(execute, {"ok": False, "reason": "lease_expired"})
    assert detail["lease_ms"] == 3_000
    assert 5_000 <= detail["age_ms"] < 60_000
    renew = RenewCommand("c1", lease_ms=sent + 3_000, sent_ms=sent, clock="k")
    assert _lease_detail(renew, {"ok": False, "reason": "lease_expired"})["lease_ms"] == 3_000


def test_other_refusals_and_leaseless_commands_carry_nothing_more() -> None:
    execute = ExecuteCommand("c1", "PLACE", lease_ms=10, sent_ms=5)
    assert _lease_detail(execute, {"ok": False, "reason": "busy"}) == {}
    assert _lease_detail(ExecuteCommand("c2", "PLACE"), {"reason": "lease_expired"}) == {}
