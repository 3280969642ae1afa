"""The bridge from a team into ROS 2 (``teamtree ros2-bridge``): the team as
``visualization_msgs/MarkerArray``, each agent's health as
``diagnostic_msgs/DiagnosticArray``, the missions as JSON, and missions taken from a
ROS 2 topic, for RViz, Foxglove and ROS 2 tools.

``scene`` (markers), ``health`` (statuses), ``mission_state`` (the missions' JSON) and
``intake`` (requests from ROS 2) are pure; ``node`` is the rclpy node in its own
thread; ``bridge`` the observer that joins the two. None imports rclpy when imported:
the node's thread does, so teamtree imports without ROS 2.
"""

from teamtree.agents.observers.ros2.bridge import Ros2Bridge
from teamtree.agents.observers.ros2.health import agent_statuses
from teamtree.agents.observers.ros2.intake import MissionRequest, read_request
from teamtree.agents.observers.ros2.mission_state import mission_state
from teamtree.agents.observers.ros2.node import BridgeNode, BridgeTopics
from teamtree.agents.observers.ros2.scene import scene_markers

__all__ = [
    "BridgeNode",
    "BridgeTopics",
    "MissionRequest",
    "Ros2Bridge",
    "agent_statuses",
    "mission_state",
    "read_request",
    "scene_markers",
]
