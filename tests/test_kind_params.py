"""Kind parameters as declared types: every kind's Struct rejects a wrong-typed key with
a ConfigError naming the file and ``agents[i].key``, and unknown keys stay errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.allocation.params import AllocatorParams, CobotParams, KittingHumanParams
from teamtree.agents.capability.params import FactoryRobotParams, JobSourceParams
from teamtree.agents.humans.params import HumanParams
from teamtree.agents.ltl.params import LtlPlannerParams, LtlRobotParams
from teamtree.agents.multitask.params import MultitaskParams
from teamtree.agents.observers.recorder import RecorderParams
from teamtree.agents.runtime.config import parse_config
from teamtree.agents.runtime.echo import EchoParams
from teamtree.agents.runtime.hello import HelloParams
from teamtree.agents.runtime.params import decode_params
from teamtree.agents.tasktree.params import RobotParams
from teamtree.agents.world.params import WorldParams
from teamtree.broker import ConfigError
from teamtree.drivers.ros2.params import Ros2Params
from teamtree.drivers.sim_params import SimDriverParams
from teamtree.drivers.vda5050.params import Vda5050Params
from tests.test_typed_wire import _fields, _may_accept

#: every kind's params Struct -> the least valid entry (its required keys)
PARAMS: dict[type[msgspec.Struct], dict[str, Any]] = {
    EchoParams: {},
    HelloParams: {"peers": []},
    RecorderParams: {},
    RobotParams: {"profile": "pr2", "driver": "d"},
    HumanParams: {"hand": "h"},
    WorldParams: {},
    LtlRobotParams: {},
    LtlPlannerParams: {},
    MultitaskParams: {},
    AllocatorParams: {},
    KittingHumanParams: {},
    CobotParams: {},
    FactoryRobotParams: {"type": "M"},
    JobSourceParams: {},
    SimDriverParams: {"robot": "r", "agent": "a"},
    Vda5050Params: {"agent": "a", "manufacturer": "m", "serial_number": "s"},
    Ros2Params: {"agent": "a", "behaviours": {}},
}

PATH = Path("team.toml")


def _decode(typ: type[msgspec.Struct], entry: dict[str, Any]) -> Any:
    config = parse_config(
        {"team": {"name": "t"}, "agents": [{"id": "a1", "kind": "x", **entry}]}, PATH
    )
    return decode_params(config.agents[0], config, typ)


#: what TOML can hold (no null)
toml_values = st.one_of(
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


@pytest.mark.parametrize("typ", list(PARAMS), ids=lambda t: t.__name__)
def test_the_least_entry_decodes(typ: type[msgspec.Struct]) -> None:
    assert isinstance(_decode(typ, PARAMS[typ]), typ)


@pytest.mark.parametrize("typ", list(PARAMS), ids=lambda t: t.__name__)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_a_wrong_typed_key_names_the_file_and_key(typ: type[msgspec.Struct], data: Any) -> None:
    field = data.draw(st.sampled_from(_fields(typ)), label="field")
    wrong = data.draw(toml_values.filter(lambda v: not _may_accept(field.type, v)), label="v")
    with pytest.raises(ConfigError) as err:
        _decode(typ, {**PARAMS[typ], field.encode_name: wrong})
    assert err.value.path == str(PATH)
    assert err.value.key is not None
    assert err.value.key.startswith(f"agents[0].{field.encode_name}"), str(err.value)
    assert "expected" in str(err.value)


@pytest.mark.parametrize("typ", list(PARAMS), ids=lambda t: t.__name__)
def test_unknown_keys_are_errors(typ: type[msgspec.Struct]) -> None:
    with pytest.raises(ConfigError, match="unknown key\\(s\\) colour, speedd") as err:
        _decode(typ, {**PARAMS[typ], "speedd": 1, "colour": "red"})
    assert err.value.key == "agents[0]"


@pytest.mark.parametrize("typ", list(PARAMS), ids=lambda t: t.__name__)
def test_a_missing_required_key_is_named(typ: type[msgspec.Struct]) -> None:
    for key in PARAMS[typ]:
        with pytest.raises(ConfigError, match="is missing") as err:
            _decode(typ, {k: v for k, v in PARAMS[typ].items() if k != key})
        assert err.value.key == f"agents[0].{key}"
