"""Seed 002 hardware: robot types, profiles from dicts, capability matrices, towers."""

import numpy as np
import pytest

import teamtree.hardware as hw
from teamtree.broker import ConfigError
from teamtree.hardware import (
    ROBOT_TYPES,
    AssembledTeam,
    Domain,
    RobotProfile,
    factory_robots,
    make_robot,
    profiles_from_dicts,
    strength_capability,
    type_capability,
)


def _isort_key(name: str) -> tuple[int, str]:
    if name.isupper():
        return (0, name)
    return (1, name) if name[0].isupper() else (2, name)


def test_all_is_sorted_and_complete():
    assert hw.__all__ == sorted(hw.__all__, key=_isort_key)
    assert all(hasattr(hw, n) for n in hw.__all__)


def test_table_ii_amounts_and_ports():
    robots = factory_robots()
    assert len(robots) == 12
    kinds = [r.kind for r in robots]
    assert kinds.count("B") == 2 and kinds.count("M") == 3
    assert [ROBOT_TYPES[k].ports for k in ("B", "L", "M", "S1", "O1")] == [0, 3, 2, 1, 1]
    assert [r.robot_id for r in robots][:8] == ["b1", "b2", "l1", "m1", "m2", "m3", "s1", "s2"]
    assert not make_robot("B").assemblable and make_robot("L").assemblable


def test_strength_matrix_of_m():
    c = strength_capability(make_robot("M"))
    assert c.matrix.shape == (9, 5)
    assert c.q.tolist() == [1, 0, 0, 2, 0, 0, 1, 1, 0]  # q_i = count(level >= s_i)
    assert c.P[3].tolist() == [1, 3, 1] and c.P[7].tolist() == [1, 1, 1]
    assert c.s.tolist() == [1, 2, 3] * 3


def test_type_matrix_of_o1_and_l():
    t = type_capability(make_robot("O1"))
    assert t.types(Domain.PERCEPTION) == [3] and t.q_hat.tolist() == [1, 0, 0]
    tl = type_capability(make_robot("L"))
    assert tl.q_hat.tolist() == [1, 2, 1] and tl.positions[(1, 1)] == (1, 5, 1)


def test_profile_round_trip_and_table_shortcut():
    m = make_robot("M", "m7", battery=0.8)
    assert RobotProfile.from_dict(m.to_dict()) == m
    assert RobotProfile.from_dict({"id": "m7", "kind": "M", "battery": 0.8}) == m


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"id": "x", "kind": "M", "colour": "red"}, "colour"),
        ({"id": "x", "kind": "Q"}, "kind"),
        ({"id": "a/b", "kind": "M"}, "id"),
        ({"id": "x", "kind": "M", "battery": 2}, "battery"),
        ({"id": "x", "kind": "M", "ports": -1}, "ports"),
        ({"id": "x", "kind": "M", "components": [{"domain": "smell"}]}, "components[0].domain"),
        ({"id": "x", "kind": "M", "components": [{"domain": "P", "lvl": 1}]}, "components[0].lvl"),
        (
            {"id": "x", "kind": "M", "components": [{"domain": "P", "position": [0, 1, 1]}]},
            "components[0].position",
        ),
    ],
)
def test_bad_profiles_name_the_key(data, key):
    with pytest.raises(ConfigError) as err:
        RobotProfile.from_dict(data, path="team.toml")
    assert err.value.key == key and err.value.path == "team.toml"


def test_profiles_from_dicts_duplicate_and_index():
    with pytest.raises(ConfigError) as err:
        profiles_from_dicts([{"id": "a", "kind": "M"}, {"id": "a", "kind": "B"}])
    assert err.value.key == "robots[1].id"
    with pytest.raises(ConfigError) as err:
        profiles_from_dicts([{"id": "a", "kind": "M"}, {"id": "b", "kind": "M", "x": 1}])
    assert err.value.key == "robots[1].x"


def test_custom_profile_components():
    p = RobotProfile.from_dict(
        {
            "id": "c1",
            "kind": "crane",
            "size": 6,
            "collaborability": 4,
            "ports": 2,
            "components": [
                {"domain": "manipulation", "level": 2, "count": 2, "position": [1, 6, 1]}
            ],
        }
    )
    assert len(p.components) == 2 and p.components[0].type == 2


def test_tower_heights_add_and_locomotion_from_ground():
    r = {x.robot_id: x for x in factory_robots()}
    team = AssembledTeam((r["l1"], r["m1"], r["s1"]))
    assert team.is_feasible() and team.height == 10
    comps = team.components()
    assert sum(c.domain == Domain.LOCOMOTION for c in comps) == 1
    top = max(c.position[1] for c in comps if c.domain == Domain.MANIPULATION)
    assert top == 10
    assert not AssembledTeam((r["o1"], r["m1"])).is_feasible()  # no locomotion at the bottom
    assert not AssembledTeam((r["m1"], r["l1"])).is_feasible()  # L cannot sit on M
    assert not AssembledTeam((r["l1"], r["s1"], r["o1"])).is_feasible()  # S1 has one port
    assert np.isclose(team.strength_capability().q[6:9].sum(), 2)  # one lv-2 locomotion


def test_capabilities_are_shared_between_equal_robots_and_cannot_be_changed() -> None:
    """One matrix per distinct set of components: a caller that wrote into it would change
    every robot of that build, so writing raises instead."""
    a, b = make_robot("M", "m1"), make_robot("M", "m2")
    assert type_capability(a) is type_capability(b)
    assert strength_capability(a) is strength_capability(b)
    assert strength_capability(a) is not strength_capability(a, 4)
    t, c = type_capability(a), strength_capability(a)
    for array in (t.T, t.q_hat, c.s, c.q, c.P):
        with pytest.raises(ValueError):
            array[0] = 99
    with pytest.raises(TypeError):
        t.positions[(0, 1)] = (1, 1, 1)  # type: ignore[index]
    assert type_capability(make_robot("L")) is not t
