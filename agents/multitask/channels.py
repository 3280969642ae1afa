"""The multitask robot's channels (the wire is in ``robot.py``'s docstring).

Their own module because the robot, its unit claims, its progress reports and its
run summary each publish on some of them.
"""

MISSION = "mission"
STATE = "state"
RESOURCES = "resources"
SNAPSHOT = "snapshot"
EVENTS = "events"
CLAIMS = "claims"
CLAIM_REPLY = "claim_reply"
UNITS = "units"
UNIT_SNAPSHOT = "unit_snapshot"
