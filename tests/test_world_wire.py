"""The world service's broker messages are typed: ``world.move_object`` decodes or
names its fault, and the world's violation records are ``world.violation`` bodies."""

from __future__ import annotations

import msgspec
import pytest

from teamtree.agents.world.wire import MoveObject, Violation, WorldWireError, decode_move_object
from teamtree.hardware.world import World


def test_move_object_decodes_numbers_and_names_a_bad_field() -> None:
    assert decode_move_object({"object": "cup", "position": [1, 0.5, 2]}) == MoveObject(
        "cup", (1.0, 0.5, 2.0)
    )
    with pytest.raises(WorldWireError, match=r"\$\.position"):
        decode_move_object({"object": "cup", "position": [1, 2]})
    with pytest.raises(WorldWireError, match=r"\$\.yaw"):
        decode_move_object({"object": "cup", "position": [1, 2, 3], "yaw": "left"})
    with pytest.raises(WorldWireError, match="Expected `object`, got `array`"):
        decode_move_object(["cup"])


def test_the_worlds_violation_records_are_violation_bodies() -> None:
    objects = {"cup": {"shape": "cylinder", "dims": [0.04, 0.1], "position": [0.6, 0.1, 0.75],
                       "goal": [0.6, -0.2, 0.75]}}  # fmt: skip
    robots = {"pr2": {"profile": "pr2", "base": [0, 0, 0]},
              "baxter": {"profile": "baxter", "base": [0.4, 0.6, 0.0], "yaw": -1.57}}  # fmt: skip
    w = World.from_spec(objects, robots)
    assert w.execute("pr2", "c1", "n1", "place", {"object": "cup"}, 0.0)["ok"]
    w.execute("baxter", "c2", "n1", "place", {"object": "cup"}, 0.0)  # two bodies, one object
    w.advance(60.0)
    w.move_object("cup", [0.6, 0.1, 0.75], 60.0)
    assert w.execute("pr2", "c3", "n1", "place", {"object": "cup"}, 60.0)["ok"]
    w.advance(120.0)
    assert w.execute("pr2", "c4", "n1", "place", {"object": "cup"}, 120.0)["ok"]
    w.advance(180.0)  # placed again without being moved: placed_twice
    kinds = {v["kind"] for v in w.violations}
    assert {"double_run", "placed_twice"} <= kinds, kinds
    for record in w.violations:
        assert msgspec.to_builtins(msgspec.convert(record, Violation, strict=True)) == record
