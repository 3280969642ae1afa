"""Checking an executed joint trace against the specification.

Semantics (the team automaton's, seed 003 §II-B): robots run in parallel, and the team
satisfies φ when the robots' traces, read one robot segment after another, form a word
φ accepts. A robot's trace is split into segments at each global reallocation
(the state it was in closes one segment and opens the next). A segment reads the labels
of its states except the last: a label is read when the robot leaves the state
(§II-A's product), so plans end with a ``stay``. The checker tries the team order
first, then searches every arrangement that keeps each robot's segments in order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from teamtree.planners.ltl.automaton import Automaton, Progression
from teamtree.planners.ltl.model import TransitionSystem, TSState
from teamtree.planners.ltl.syntax import Formula

__all__ = ["TraceVerdict", "check_trace", "plan_segments"]

Item = TSState | Iterable[str]


@dataclass(frozen=True)
class TraceVerdict:
    """``satisfied``; ``arrangement`` is the accepted order of (robot, segment index);
    ``reason`` says why, in a sentence; ``remaining`` is what was left undone."""

    satisfied: bool
    reason: str
    arrangement: tuple[tuple[str, int], ...] = ()
    remaining: str = ""

    def __bool__(self) -> bool:
        return self.satisfied


def _label(item: Item, ts: TransitionSystem | None) -> frozenset[str]:
    if isinstance(item, TSState):
        if ts is not None and item in ts.labels:
            return ts.labels[item]
        return frozenset((item.region, item.mode))
    if isinstance(item, tuple) and len(item) == 2 and all(isinstance(x, str) for x in item):
        s = TSState(*item)
        if ts is not None and s in ts.labels:
            return ts.labels[s]
    return frozenset(item)


def check_trace(
    spec: Formula | str | Automaton | Progression,
    segments: Mapping[str, Sequence[Sequence[Item]]],
    *,
    systems: Mapping[str, TransitionSystem] | None = None,
    max_nodes: int = 200_000,
) -> TraceVerdict:
    """Does the joint trace satisfy the specification? Pure; never raises on a bad trace.

    ``segments[robot]`` is the robot's list of trace segments (one per plan it
    executed), each a sequence of TS states (or label sets). ``systems`` gives the
    robots' labelling (relabelled states); without it a state is labelled
    ``{region, mode}``.
    """
    aut = spec if isinstance(spec, Automaton | Progression) else Progression(spec)
    robots = list(segments)
    words: dict[str, list[list[frozenset[str]]]] = {}
    for r in robots:
        ts = systems.get(r) if systems else None
        words[r] = [[_label(x, ts) for x in seg[:-1]] for seg in segments[r]]
    sink = aut.sink if isinstance(aut, Automaton) else None

    def run(q, word):
        for letter in word:
            q = aut.step(q, letter)
            if q == sink:
                break
        return q

    # 1) team order: epoch by epoch, robots in the mapping's order
    depth = max((len(w) for w in words.values()), default=0)
    order = [(r, k) for k in range(depth) for r in robots if k < len(words[r])]
    q = aut.initial
    for r, k in order:
        q = run(q, words[r][k])
    if aut.is_accepting(q):
        return TraceVerdict(True, "satisfied in team order", tuple(order))
    team_left = aut.describe(q)

    # 2) any arrangement keeping each robot's segments in order (DFS over positions)
    start = (aut.initial, tuple(0 for _ in robots))
    parent: dict = {start: None}
    stack = [start]
    while stack:
        node = stack.pop()
        q, pos = node
        if all(p == len(words[r]) for p, r in zip(pos, robots, strict=True)):
            if aut.is_accepting(q):
                found = []
                cur = node
                while parent[cur] is not None:
                    prev, step = parent[cur]
                    found.append(step)
                    cur = prev
                found.reverse()
                return TraceVerdict(True, "satisfied by a reordering of segments", tuple(found))
            continue
        if len(parent) > max_nodes:
            return TraceVerdict(
                False,
                f"undecided: more than {max_nodes} arrangements; in team order the "
                f"trace still needs: {team_left}",
                remaining=team_left,
            )
        for i, r in enumerate(robots):
            if pos[i] < len(words[r]):
                nq = run(q, words[r][pos[i]])
                if nq == sink:
                    continue
                npos = (*pos[:i], pos[i] + 1, *pos[i + 1 :])
                child = (nq, npos)
                if child not in parent:
                    parent[child] = (node, (r, pos[i]))
                    stack.append(child)
    return TraceVerdict(
        False,
        f"not satisfied: no arrangement of the robots' segments is accepted; in team "
        f"order the trace still needs: {team_left}",
        remaining=team_left,
    )


def plan_segments(plans: Iterable) -> dict[str, list[list[TSState]]]:
    """Segments of a list of executed ``TeamPlan``s (each fully executed, in order):
    a convenience for tests and simulations."""
    out: dict[str, list[list[TSState]]] = {}
    for plan in plans:
        for name in plan.plans:
            out.setdefault(name, []).append(list(plan.plans[name].states))
    return out
