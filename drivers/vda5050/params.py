"""The ``vda5050_driver`` kind's ``[[agents]]`` keys as a declared type."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import Meta, Struct

from teamtree.agents.runtime.params import ID

#: an AGV's name as it appears in its topics
_NAME = Meta(
    min_length=1,
    pattern=r"^[^/#+]+$",
    description="a non-empty name without /, #, + (the AGV's name in its topics)",
)


def _positive(what: str) -> Meta:
    return Meta(gt=0, description=what)


class Vda5050Params(Struct, frozen=True, forbid_unknown_fields=True):
    """Keys of the driver of one VDA 5050 AGV."""

    agent: Annotated[str, Meta(description="an id string", extra=ID)]
    manufacturer: Annotated[str, _NAME]
    serial_number: Annotated[str, _NAME]
    interface_name: Annotated[str, Meta(description="the topic interface name")] = "uagv"
    version: Annotated[Literal["2.0.0", "2.1.0"], Meta(description="one of 2.0.0, 2.1.0")] = "2.0.0"
    agv_broker: Annotated[
        str | None, Meta(description="the AGV broker's URL, mqtt://HOST:PORT")
    ] = None
    stations: Annotated[
        dict[str, Any], Meta(description="a table of stations {x = .., y = ..}")
    ] = {}
    loads: Annotated[
        dict[str, Any], Meta(description='a table of loads {at = "A", goal = "B"}')
    ] = {}
    action_parameters: Annotated[
        dict[str, Any], Meta(description="a table of extra parameters")
    ] = {}
    validate: Annotated[bool | None, Meta(description="true or false (default: if installed)")] = (
        None
    )
    schema_dir: Annotated[str | None, Meta(description="a folder of schema .json files")] = None
    ack_timeout_s: Annotated[float, _positive("a positive number of s")] = 5.0
    observation_hz: Annotated[float, _positive("a positive rate (Hz)")] = 5.0
    request_factsheet: Annotated[bool, Meta(description="true or false")] = True
    cancel_on_agent_loss: Annotated[bool, Meta(description="true or false")] = True
