"""Plain words for the events members report, as the monitor's and the team page's
"now" column shows them: an operator reads "finished its LTL task", not ``ltl.done``."""

from __future__ import annotations

__all__ = ["event_words"]

WORDS = {
    "behaviour.started": "started a behaviour",
    "driver.done": "finished a command",
    "factory.done": "finished its factory jobs",
    "hello.done": "said hello",
    "human.started": "started a subtask",
    "job.done": "finished a job",
    "kitting.done": "finished the kit",
    "ltl.done": "finished its LTL task",
    "mission.done": "finished its part of the mission",
    "mission.started": "started the mission",
    "step.started": "started a plan step",
    "sync.done": "caught up with the team",
}
"""Event kind -> what it says the member did."""

VERBS = {"started": "started", "done": "finished", "status": "reported"}


def event_words(kind: str) -> str:
    """What `kind` says its sender did, in words; an unknown kind is read from its
    parts (``crane.started`` -> "started crane"), never shown raw."""
    if kind in WORDS:
        return WORDS[kind]
    noun, _, verb = kind.rpartition(".")
    if noun and verb in VERBS:
        return f"{VERBS[verb]} {noun.replace('_', ' ').replace('.', ' ')}"
    return kind.replace("_", " ").replace(".", " ")
