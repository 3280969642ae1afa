"""The simulated world: objects, goals, one-armed robot bodies and human hands (seed
000 §3.1, §2.3, §3.2.1).

Pure: no I/O and no clock reads. Every call takes the simulated time ``t`` (seconds)
and first advances the world to it; time never runs backwards. The world agent maps
wall time to simulated time (``× time_factor``) and serves this over ZeroMQ.

One concept per module; ``World`` (``facade``) composes them:

=============== ====================================================================
vectors         three-vector helpers
objects         ``WorldObject``: shape, pose, goal, holder
object_versions ``ObjectVersions``: which object views changed since a version
commands        ``CommandStatus``, ``Stage``, ``CommandRecord`` and reply maps
events          ``EventLog``: numbered events and violations
bodies          ``RobotBody``, its ``PlaceJob`` and straight-line ``BodyLeg`` motion
hands           ``HumanHand``, its ``HandJob``, curved ``HandLeg`` arcs and noisy track
fences          ``Fences``: the world's own fence counter per object
state           ``WorldState``: what the parts share
clock           ``advance``: stage ends and lease deadlines in time order
placing         ``execute`` (PLACE), ``cancel``, ``pause``, ``resume``, ``move_object``
leases          ``renew``, and stopping a body whose lease lapsed
hand_commands   ``hand_reach``, ``hand_place``, ``hand_move``, ``hand_cancel``
views           poses, object/robot/hand views, ``observe``, ``state``, ``info``
restore         ``restore``: object poses and placed state from a ``state`` body
facade          ``World`` and ``World.from_spec``
=============== ====================================================================

Failure reasons: ``busy`` (another command runs), ``held`` (another robot holds the
object), ``unreachable`` (a fixed base cannot reach object or goal, or a mobile base
would drive more than ``base_travel``), ``cancelled``, ``unknown_robot``,
``unknown_object``, ``unknown_behaviour``, ``no_goal``, ``bad_params``, ``unknown_hand``,
``not_holding``, ``moved`` (the object left the place a hand reached for),
``lease_expired``, ``fenced``. Violations (a coordination error made visible):
``double_hold`` when a robot or hand reaches an object another robot or hand holds,
``placed_twice`` when an object is placed a second time without having been moved
since, ``double_run`` when a robot starts a behaviour on an object another robot's
unfinished command (running or paused) is about.
"""

from teamtree.hardware.world.bodies import BodyLeg, PlaceJob, RobotBody
from teamtree.hardware.world.commands import BEHAVIOURS, CommandRecord, CommandStatus, Stage
from teamtree.hardware.world.events import EVENT_LOG, EventLog
from teamtree.hardware.world.facade import World
from teamtree.hardware.world.fences import Fences
from teamtree.hardware.world.hands import (
    HAND_SAMPLE_S,
    HAND_THEN,
    TRACK_KEEP,
    HandJob,
    HandLeg,
    HumanHand,
)
from teamtree.hardware.world.object_versions import ObjectVersions
from teamtree.hardware.world.objects import GOAL_TOLERANCE, WorldObject

__all__ = [
    "BEHAVIOURS",
    "EVENT_LOG",
    "GOAL_TOLERANCE",
    "HAND_SAMPLE_S",
    "HAND_THEN",
    "TRACK_KEEP",
    "BodyLeg",
    "CommandRecord",
    "CommandStatus",
    "EventLog",
    "Fences",
    "HandJob",
    "HandLeg",
    "HumanHand",
    "ObjectVersions",
    "PlaceJob",
    "RobotBody",
    "Stage",
    "World",
    "WorldObject",
]
