"""A ROS 2 driver: one ROS 2 robot (Nav2, MoveIt, a vendor's action servers) as the body
of a teamtree robot agent.

``interfaces`` (interface types found by name, messages from plain values), ``params``
(the config's keys), ``mapping`` (behaviour leaf -> goal), ``ros_side`` (the rclpy node
in its own thread), ``lease_guard`` (the watchdog process that cancels a goal whose
lease lapsed) and ``driver`` (the agent, kind ``ros2_driver``). None imports rclpy
when imported: it is loaded when a node starts, so teamtree imports without ROS 2.
"""

from teamtree.drivers.ros2.driver import Ros2DriverAgent
from teamtree.drivers.ros2.interfaces import (
    InterfaceError,
    check_fields,
    describe,
    fill,
    resolve,
    split_name,
    to_plain,
)
from teamtree.drivers.ros2.lease_guard import GuardLink
from teamtree.drivers.ros2.mapping import (
    BehaviourError,
    Place,
    Site,
    fill_placeholders,
    lookup_behaviour,
    pose_stamped,
    site_from_config,
)
from teamtree.drivers.ros2.params import BehaviourSpec, Ros2Params, TopicRef
from teamtree.drivers.ros2.ros_side import RosSide

__all__ = [
    "BehaviourError",
    "BehaviourSpec",
    "GuardLink",
    "InterfaceError",
    "Place",
    "Ros2DriverAgent",
    "Ros2Params",
    "RosSide",
    "Site",
    "TopicRef",
    "check_fields",
    "describe",
    "fill",
    "fill_placeholders",
    "lookup_behaviour",
    "pose_stamped",
    "resolve",
    "site_from_config",
    "split_name",
    "to_plain",
]
