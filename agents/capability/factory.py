"""The robot factory of seed 002 over the broker: kinds ``factory_robot`` and ``job_source``.

Each ``factory_robot`` runs the pure favor machines of ``teamtree.planners.capability``
(a :class:`FavorResponder` always, a :class:`FavorRequester` per job) and maps their
actions to the wire; ``job_source`` hands jobs to robots and prints the summary.
``docs/favors.md`` is the wire reference:

=================================  ====================  ====  ======
topic                              kinds                 QoS   retain
=================================  ====================  ====  ======
``_/favors``                       favor.request         1     no
``<from>/favor/<to>``              favor.grant/.reject/  1     no
                                   .accept/.release/
                                   .revoke/.status
``<robot>/led``                    led                   1     yes
``<source>/job/<robot>``           job.assign            1     no
``<robot>/job_report``             job.accepted/         1     no
                                   .declined/.selected/
                                   .done/.failed
``_/factory``                      factory.done          1     no
=================================  ====================  ====  ======
"""

from __future__ import annotations

# The factory in rooms: channels.py (topics), favor_wire.py (typed favor bodies and their
# codec), robot.py (FactoryRobot), job_record.py (its jobs and their reports),
# job_source.py (JobSource). This module keeps the names the entry points, tests and
# benchmarks import from it.
from teamtree.agents.capability.channels import (
    FACTORY_CHANNEL,
    FAVOR_CHANNEL,
    FAVORS_CHANNEL,
    JOB_CHANNEL,
    LED_CHANNEL,
    LEDS,
    REPORT_CHANNEL,
)
from teamtree.agents.capability.favor_wire import (
    FavorWireError,
    capability_from_wire,
    capability_to_wire,
    lease_id,
    message_from_wire,
    message_to_wire,
    offer_from_wire,
    offer_to_wire,
    query_from_wire,
    query_to_wire,
    request_from_wire,
    request_to_wire,
)
from teamtree.agents.capability.job_record import control_summary
from teamtree.agents.capability.job_source import JobOrder, JobSource
from teamtree.agents.capability.robot import TEAM_DEFAULTS, FactoryRobot

__all__ = [
    "FACTORY_CHANNEL",
    "FAVORS_CHANNEL",
    "FAVOR_CHANNEL",
    "JOB_CHANNEL",
    "LEDS",
    "LED_CHANNEL",
    "REPORT_CHANNEL",
    "TEAM_DEFAULTS",
    "FactoryRobot",
    "FavorWireError",
    "JobOrder",
    "JobSource",
    "capability_from_wire",
    "capability_to_wire",
    "control_summary",
    "lease_id",
    "message_from_wire",
    "message_to_wire",
    "offer_from_wire",
    "offer_to_wire",
    "query_from_wire",
    "query_to_wire",
    "request_from_wire",
    "request_to_wire",
]
