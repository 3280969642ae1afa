"""The person's page in plain words: the person agent's terminal lines (``refused
finish: busy``, ``question pr2 root/0/1 PLACE(cup): ...``) and the world's refusal
reasons (``held``, ``not_holding``) as sentences a person reads at a glance
("your hand is still moving: wait until it holds the object"). Pure: no I/O."""

from __future__ import annotations

import re
from collections.abc import Callable

from teamtree.agents.observers.mission_labels import object_words

__all__ = ["say_line", "say_refusal"]

#: why the world refused to start a reach, in plain words ({what}: the object)
START_REFUSED = {
    "held": "{what} is in another hand: leave it to them",
    "busy": "your hand is not free: place what you hold first",
    "unknown_object": "the table has no {what}",
    "no_goal": "{what} has no place to go",
}
#: why the world refused to place what the hand holds
FINISH_REFUSED = {
    "busy": "your hand is still moving: wait until it holds the object",
    "not_holding": "your hand holds nothing to place",
    "no_goal": "what you hold has no place to go",
}
#: why a reach or a placing the hand had begun stopped
STOPPED = {
    "replaced": "your hand turned to something else",
    "cancelled": "your hand stopped and put down what it carried",
    "held": "another hand took it first: your hand is free again",
}
HOW = {"timeout": " (no answer in time)", "invalid": " (the answer was not understood)"}


def say_refusal(action: str, reason: str | None, what: str = "it") -> str:
    """A refused tap in plain words: `action` is ``start`` or ``finish``."""
    table = START_REFUSED if action == "start" else FINISH_REFUSED
    known = table.get(str(reason))
    if known is not None:
        return "Not done: " + known.format(what=what)
    return "Not done: the world did not accept it; look at the table and try again"


def say_line(text: str, words: Callable[[str], str | None]) -> str:
    """One of the person agent's log lines in plain words. `words` turns a leaf id or
    its label (``PLACE(cup)``) into ``place the cup`` (None when unknown)."""

    def leaf(key: str) -> str:
        return words(key) or "that subtask"

    tag, _, rest = text.partition(" ")
    if tag == "ready":
        team = rest.split("team=", 1)[1] if "team=" in rest else "the team"
        return f"you are in team {team}"
    if tag == "question":
        robot, node = [*rest.split(" "), "", ""][:2]
        return f"{robot} asked whether you go on: {leaf(node)}"
    if tag == "answered":
        robot, answer = [*rest.split(" "), "", ""][:2]
        choice = "I go on with it" if answer == "continue" else "you take it"
        return f'you told {robot}: "{choice}"'
    if tag == "robot":
        m = re.match(r"(\S+) (continues with|leaves you) (.*) \(answer (\w+)\)$", rest)
        if m:
            robot, verb, label, how = m.groups()
            if verb == "continues with":
                return f"{robot} goes on: {leaf(label)}{HOW.get(how, '')}"
            return f"{robot} leaves it to you: {leaf(label)}{HOW.get(how, '')}"
    if tag == "started":
        return f"you started: {leaf(rest.split(' ')[0])}"
    if tag in ("holding", "finishing", "placed"):
        if rest.startswith("(no world"):
            return "you placed it"
        what = object_words(rest) if rest and rest != "None" else "it"
        verb = {"holding": "you hold", "finishing": "you are placing", "placed": "you placed"}
        return f"{verb[tag]} {what}"
    if tag == "refused":
        m = re.match(r"start (\S+): (\S+)$", rest)
        if m:
            return say_refusal("start", m.group(2), object_words(m.group(1)))
        if rest.startswith("finish: "):
            return say_refusal("finish", rest.removeprefix("finish: "))
        return STOPPED.get(rest, "your hand could not finish that move")
    if tag == "error":
        if rest.startswith("the world does not answer"):
            return "the simulated world does not answer; try again in a moment"
        if rest.startswith("the question ") and rest.endswith(" is closed"):
            return "that question was closed already"
        return rest
    if text.startswith("waiting for the team's simulated world"):
        return "waiting for the team's simulated world"
    return text
