"""The factory's topics and LED states (docs/favors.md is the wire reference)."""

FAVORS_CHANNEL = "favors"  #: team channel of favor requests
FAVOR_CHANNEL = "favor"  #: <from>/favor/<to>: directed lease messages
LED_CHANNEL = "led"  #: <robot>/led, retained
JOB_CHANNEL = "job"  #: <source>/job/<robot>: job.assign
REPORT_CHANNEL = "job_report"  #: <robot>/job_report: progress of a job
FACTORY_CHANNEL = "factory"  #: _/factory: factory.done ends the run

LEDS = ("idle", "busy", "helping")
"""LED states of Fig. 1: green idle, blue busy (job received), white helping."""
