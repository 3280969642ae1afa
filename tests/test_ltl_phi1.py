"""φ1 of seed 003 (Scenario 1): the nested reading the project runs and the flat one
that drops the printed formula's two extra parentheses (``planners.ltl.hospital``)."""

from __future__ import annotations

from teamtree.planners.ltl import FORMULAS, Mission, hospital_team, parse


def _wassi_regions(scenario: str) -> list[str]:
    formula, robots = hospital_team(scenario)
    plan = Mission(formula, robots).allocate()
    return [f"{s.region}/{s.mode}" for s in plan["Wassi"].states]


def test_the_printed_phi1_is_unbalanced_and_both_readings_parse() -> None:
    printed_last = r"\diamond (c1 \land Training \land \diamond (c7 \land Training \land \diamond (c6 \land Training)))))"
    assert printed_last.count("(") + 2 == printed_last.count(")")
    for name in ("scenario1", "scenario1_flat"):
        parse(FORMULAS[name])


def test_the_nested_reading_trains_before_the_return_to_p4() -> None:
    route = _wassi_regions("scenario1")
    assert route.index("c6/training") < route.index("p4/standby")


def test_the_flat_reading_lets_the_plan_return_to_p4_before_training() -> None:
    route = _wassi_regions("scenario1_flat")
    assert route.index("p4/standby") < route.index("c6/training")
