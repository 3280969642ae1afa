"""A VDA 5050 v2 master-control driver: one AGV (or mobile manipulator) as the body of a
teamtree robot agent.

``topics`` (topic names, headers), ``site`` (stations, loads, behaviour -> stops),
``order`` (orders, order updates, instant actions), ``state`` (reading the AGV's state
as order progress), ``schema`` (validation against the VDA 5050 JSON schemas),
``capabilities`` (what the AGV's factsheet says it can do), ``observation`` (what the
robot sees of its AGV), ``agv_link`` (the session with the AGV's broker) and ``driver``
(the agent, kind ``vda5050_driver``). All but ``agv_link`` and ``driver`` are pure.
"""

from teamtree.drivers.vda5050.agv_link import AgvLink
from teamtree.drivers.vda5050.capabilities import BEHAVIOURS, capabilities
from teamtree.drivers.vda5050.observation import MAX_SHOWN_ERRORS, agv_observation, error_texts
from teamtree.drivers.vda5050.order import OrderBuilder, SentOrder, instant_action
from teamtree.drivers.vda5050.schema import SchemaCheck, SchemasUnavailable, schema_directory
from teamtree.drivers.vda5050.site import (
    BehaviourError,
    Load,
    Site,
    Station,
    Stop,
    site_from_config,
)
from teamtree.drivers.vda5050.state import Verdict, assess, carries, error_text
from teamtree.drivers.vda5050.topics import (
    CONNECTION_STATES,
    SUBTOPICS,
    VERSIONS,
    AgvAddress,
    Headers,
    iso_timestamp,
)

__all__ = [
    "BEHAVIOURS",
    "CONNECTION_STATES",
    "MAX_SHOWN_ERRORS",
    "SUBTOPICS",
    "VERSIONS",
    "AgvAddress",
    "AgvLink",
    "BehaviourError",
    "Headers",
    "Load",
    "OrderBuilder",
    "SchemaCheck",
    "SchemasUnavailable",
    "SentOrder",
    "Site",
    "Station",
    "Stop",
    "Verdict",
    "agv_observation",
    "assess",
    "capabilities",
    "carries",
    "error_text",
    "error_texts",
    "instant_action",
    "iso_timestamp",
    "schema_directory",
    "site_from_config",
]
