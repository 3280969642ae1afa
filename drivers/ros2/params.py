"""The ``ros2_driver`` kind's ``[[agents]]`` keys as declared types."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta, Struct

from teamtree.agents.runtime.params import ID

_ROS_NAME = Meta(
    min_length=1,
    pattern=r"^[~/A-Za-z_][A-Za-z0-9_/~{}]*$",
    description="a ROS 2 name such as /navigate_to_pose",
)
_TYPE = Meta(min_length=1, description="an interface type such as nav2_msgs/action/NavigateToPose")


def _positive(what: str) -> Meta:
    return Meta(gt=0, description=what)


class TopicRef(Struct, frozen=True, forbid_unknown_fields=True):
    """A topic the driver reads: its name and message type."""

    topic: Annotated[str, _ROS_NAME]
    type: Annotated[str, _TYPE]


class BehaviourSpec(Struct, frozen=True, forbid_unknown_fields=True):
    """How one behaviour runs on the robot: exactly one of an action to send a goal to,
    a service to call or a topic to publish on, with the interface `type` and the goal,
    request or message fields (`goal`), whose strings may hold placeholders."""

    type: Annotated[str, _TYPE]
    action: Annotated[str, _ROS_NAME] | None = None
    service: Annotated[str, _ROS_NAME] | None = None
    topic: Annotated[str, _ROS_NAME] | None = None
    goal: Annotated[dict[str, Any], Meta(description="a table of the goal's fields")] = {}
    success_field: Annotated[
        str | None, Meta(description="a bool field of the service's response")
    ] = None

    @property
    def name(self) -> str:
        """The action, service or topic name."""
        return self.action or self.service or self.topic or ""

    @property
    def via(self) -> str:
        """``action``, ``service`` or ``topic``."""
        return "action" if self.action else "service" if self.service else "topic"


class Ros2Params(Struct, frozen=True, forbid_unknown_fields=True):
    """Keys of the driver of one ROS 2 robot."""

    agent: Annotated[str, Meta(description="an id string", extra=ID)]
    behaviours: Annotated[
        dict[str, Any], Meta(description="a table of behaviours {MOVE = {action = ..}}")
    ]
    domain_id: Annotated[int, Meta(ge=0, le=232, description="a ROS_DOMAIN_ID (0-232)")] | None = (
        None
    )
    node_name: (
        Annotated[str, Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", description="a ROS 2 node name")]
        | None
    ) = None
    frame: Annotated[str, Meta(min_length=1, description="the map frame id")] = "map"
    stations: Annotated[
        dict[str, Any], Meta(description="a table of stations {x = .., y = ..}")
    ] = {}
    objects: Annotated[
        dict[str, Any], Meta(description="a table of objects {position = [x, y, z]}")
    ] = {}
    pose: TopicRef | None = None
    battery: TopicRef | None = None
    diagnostics: TopicRef | None = None
    arm: Annotated[
        tuple[float, float, float] | None,
        Meta(description="[x, y, z] of the arm when no pose topic says where the robot is"),
    ] = None
    alive_s: Annotated[float, _positive("a positive number of s")] = 2.0
    server_wait_s: Annotated[float, _positive("a positive number of s")] = 5.0
    observation_hz: Annotated[float, _positive("a positive rate (Hz)")] = 5.0
    lease_guard: Annotated[bool, Meta(description="true or false")] = True
    cancel_on_agent_loss: Annotated[bool, Meta(description="true or false")] = True
