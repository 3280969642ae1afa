"""The person page's rules for its taps agree with the simulated world's: over random
runs of robots placing, the hand reaching, holding, placing and cancelling, whenever
``taps.hand_state`` / ``taps.may_reach`` (read from the world's own ``hand_observe``
reply) enable Start or Finish, the world accepts that command at that instant; and
Finish is enabled whenever the world would accept it. Also: the page's words
(``say_line``, ``plain_label``) never raise and never show the wire's words."""

from __future__ import annotations

import copy
import math
import re

from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from teamtree.agents.observers.mission_labels import plain_label
from teamtree.agents.observers.web.plain import say_line, say_refusal
from teamtree.agents.observers.web.taps import HAND_STATES, hand_state, may_reach
from teamtree.hardware import World

OBJECTS = {
    "cup": {"shape": "cylinder", "dims": [0.04, 0.10], "position": [0.10, -0.05, 0.80],
            "goal": [-0.05, 0.05, 0.80]},
    "tea_pot": {"shape": "sphere", "dims": [0.04], "position": [0.45, 0.20, 0.79],
                "goal": [-0.30, -0.60, 0.79]},
    "sugar": {"shape": "box", "dims": [0.1, 0.1, 0.04], "position": [0.5, 0.0, 0.77],
              "goal": [-0.3, 0.2, 0.77]},
}  # fmt: skip
ROBOTS = {
    "pr2": {"profile": "pr2", "base": [-0.75, 0.0, 0.0], "yaw": 0.0},
    "baxter": {"profile": "baxter", "base": [0.95, 0.0, 0.0], "yaw": math.pi},
}
HANDS = {"alice": {"rest": [0.8, 0.0, 0.95], "speed": 0.6, "grasp_time": 0.3}}
NAMES = sorted(OBJECTS)

STEP = st.one_of(
    st.tuples(st.just("robot"), st.sampled_from(sorted(ROBOTS)), st.sampled_from(NAMES)),
    st.tuples(st.just("reach"), st.sampled_from(NAMES)),
    st.tuples(st.just("place")),
    st.tuples(st.just("cancel")),
    st.tuples(st.just("wait"), st.floats(0.05, 3.0)),
)


def accepted(world: World, command: str, t: float, obj: str | None = None) -> bool:
    """Whether the world takes `command` now (tried on a copy, the world unchanged)."""
    trial = copy.deepcopy(world)
    if command == "reach":
        return bool(trial.hand_reach("alice", "probe", obj, t, then="hold")["ok"])
    return bool(trial.hand_place("alice", "probe", t)["ok"])


@settings(max_examples=60, deadline=None, print_blob=True)
@given(st.lists(STEP, min_size=1, max_size=25))
def test_the_page_enables_only_what_the_world_accepts(steps) -> None:
    world = World.from_spec(OBJECTS, ROBOTS, HANDS, seed=1)
    t = 0.0
    seen: set[str] = set()
    for n, step in enumerate(steps):
        if step[0] == "robot":
            world.execute(step[1], f"r{n}", "node", "PLACE", {"object": step[2]}, t)
        elif step[0] == "reach":
            world.hand_reach("alice", f"h{n}", step[1], t, then="hold")
        elif step[0] == "place":
            world.hand_place("alice", f"h{n}", t)
        elif step[0] == "cancel":
            world.hand_cancel("alice", t)
        else:
            t += step[1]
        reply = world.observe_hand("alice", t)
        state, _ = hand_state(reply["hand"])
        assert state in HAND_STATES
        seen.add(state)
        note(f"after {step}: hand {state}, {reply['hand']}")
        for obj in NAMES:
            if state == "empty" and may_reach(reply["objects"], obj, "alice"):
                assert accepted(world, "reach", t, obj), f"Start {obj} offered, refused"
        assert (state == "holding") == accepted(world, "place", t), "Finish offered wrongly"
    event(f"hand states seen: {sorted(seen)}")


WIRE = re.compile(r"\bheld\b|not_holding|\bbusy\b|\b[A-Z]{3,}\(|root/\d|\w+_\w+|\bconcede\b")


def words(key: str) -> str | None:
    return {"root/0/1": "place the cup", "PLACE(cup)": "place the cup"}.get(key)


LINES = [
    "ready alice team=tea",
    "question pr2 root/0/1 PLACE(cup): We both went for PLACE(cup). Continue? [yes = x]",
    "answered pr2 concede",
    "answered pr2 continue",
    "robot pr2 continues with PLACE(cup) (answer timeout)",
    "robot pr2 leaves you PLACE(cup) (answer answered)",
    "started root/0/1 PLACE(cup)",
    "refused start tea_pot: held",
    "refused start cup: busy",
    "refused start cup: odd_reason",
    "holding tea_pot",
    "finishing tea_pot",
    "refused finish: busy",
    "refused finish: not_holding",
    "refused held",
    "refused cancelled",
    "placed tea_pot",
    "placed (no world to move)",
    "error the question pr2-1 is closed",
    "error the world does not answer: timed out",
]


def test_the_agents_lines_read_as_plain_words() -> None:
    for line in LINES:
        said = say_line(line, words)
        assert said and not WIRE.search(said), (line, said)
    assert say_line("refused finish: busy", words) == say_refusal("finish", "busy")
    assert "still moving" in say_refusal("finish", "busy")
    assert say_line("answered pr2 concede", words) == 'you told pr2: "you take it"'


def test_plain_labels() -> None:
    assert plain_label("PLACE", {"object": "cup"}) == "place the cup"
    assert plain_label("PLACE", {"object": "tea_pot"}, doing=True) == "placing the tea pot"
    assert plain_label("MOVE", {"object": "o1", "to": "pick"}) == "move the o1 to pick"
    assert plain_label("SEE", {}, doing=True) == "seeing"
    assert plain_label(None, {}) == "do"


@given(st.text(max_size=80))
def test_any_line_has_a_plain_reading(text) -> None:
    assert isinstance(say_line(text, words), str)
    assert isinstance(say_line(text, lambda key: None), str)
