"""Reactive reallocation, seed 003 §IV: local for an unexpected state change (Alg. 1),
local for environment changes (Def. 3, Alg. 2), global over the synchronised team
automaton (Defs. 4, 5), and critical failures (§V-A, R2).

Executed traces are sequences of TS states since the plan being executed started
(first element = the plan's first state, last = where the robot is now), one entry
per action, ``stay`` included.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from teamtree.broker import InfeasibleError, PlanningError, SpecificationError
from teamtree.planners.ltl.model import PAState, ProductAutomaton, Transition, TSState
from teamtree.planners.ltl.shortest import shortest_path
from teamtree.planners.ltl.team import Mission, RobotPlan, TeamPlan, decomposition_set

__all__ = [
    "EnvironmentChange",
    "apply_change",
    "block_edge",
    "fail_robot",
    "find_path",
    "reallocate_environment_change",
    "reallocate_global",
    "reallocate_state_change",
]


@dataclass(frozen=True)
class EnvironmentChange:
    """``Info(t)`` of §IV-B: transitions to add ``(s, s', action, weight)``, transitions to
    delete ``(s, s')``, and states to relabel ``(s, label)``."""

    add: tuple[tuple[TSState, TSState, str, float], ...] = ()
    delete: tuple[tuple[TSState, TSState], ...] = ()
    relabel: tuple[tuple[TSState, frozenset[str]], ...] = ()


def block_edge(
    mission: Mission, robot: str, source: str, target: str, *, both_ways: bool = True
) -> EnvironmentChange:
    """The change for a blocked map edge ``source -> target``: every mode's transition."""
    ts = _robot(mission, robot).ts
    pairs = [(source, target), (target, source)] if both_ways else [(source, target)]
    dels = tuple(
        (s, t)
        for s, t in ts.edges()
        if (s.region, t.region) in pairs and s.mode == t.mode and s.region != t.region
    )
    if not dels:
        raise SpecificationError(f"{robot} has no transition between {source} and {target}")
    return EnvironmentChange(delete=dels)


def _robot(mission: Mission, robot: str):
    try:
        return mission.robots[robot]
    except KeyError:
        raise SpecificationError(
            f"unknown robot {robot!r}; the team is {list(mission.robots)}"
        ) from None


def apply_change(mission: Mission, robot: str, change: EnvironmentChange) -> frozenset:
    """Revise ``P^(r)(t)`` by Def. 3 and return ``R(t)``, the deleted TS transitions.

    The product is implicit over the robot's TS, so editing the TS applies the three
    updating rules at once: Add creates ``(q, s) -> (δ(q, L(s)), s')`` for every ``q``,
    Delete removes them, Relabel changes which automaton state leaving ``s`` leads to.
    (Def. 3 writes the relabel rule on predecessors; with the paper's own product,
    where leaving ``s`` reads ``L(s)``, the affected transitions are those out of ``s``.)
    """
    ts = _robot(mission, robot).ts
    aut = mission.automaton
    deleted = set()
    for s, t in change.delete:
        if ts.succ.get(s, {}).pop(t, None) is not None:
            deleted.add((s, t))
    for s, t, action, weight in change.add:
        if weight < 0:
            raise SpecificationError(f"added transition {s}->{t}: weight must be >= 0")
        ts.succ.setdefault(s, {})[t] = Transition(t, action, weight)
        ts.succ.setdefault(t, {})
        ts.labels.setdefault(t, frozenset((t.region, t.mode)))
        ts.labels.setdefault(s, frozenset((s.region, s.mode)))
        aut.letter(ts.labels[t])
    for s, label in change.relabel:
        if s not in ts.succ:
            raise SpecificationError(f"cannot relabel {s}: not a state of {robot}")
        aut.letter(label)  # raises if the label is outside the alphabet
        ts.labels[s] = frozenset(label)
    mission.deleted.setdefault(robot, set()).update(deleted)
    return frozenset(deleted)


def fail_robot(mission: Mission, robot: str, state: TSState) -> frozenset:
    """Critical failure (R2): the robot can no longer leave ``state`` (§V-A)."""
    ts = _robot(mission, robot).ts
    dels = tuple((state, t) for t in list(ts.succ.get(state, {})))
    mission.failed.add(robot)
    return apply_change(mission, robot, EnvironmentChange(delete=dels))


def find_path(pa: ProductAutomaton, start: PAState, target_q: int, robot: str) -> RobotPlan:
    """Dijkstra on one robot's product automaton from ``start`` to a state whose automaton
    component is ``target_q`` (any accepting state if ``target_q`` is accepting). The
    TS component of the goal is free: only ``q`` matters to the next robot's switch.
    Raises InfeasibleError naming the robot when there is none."""
    aut = pa.automaton
    any_final = target_q in aut.accepting

    def goal(q: int) -> bool:
        return q == target_q or (any_final and q in aut.accepting)

    def successors(node: PAState) -> Iterator[tuple[PAState, str, float]]:
        for nxt, t in pa.successors(node):
            yield nxt, t.action, t.weight

    steps, _ = shortest_path(start, successors, lambda node: goal(node.q))
    if steps is not None:
        return RobotPlan(
            robot,
            (start.s, *(n.s for n, _, _ in steps)),
            tuple(a for _, a, _ in steps),
            tuple(w for _, _, w in steps),
            (start.q, *(n.q for n, _, _ in steps)),
        )
    err = InfeasibleError(
        f"{robot} cannot finish its sub-task from {tuple(start.s)}: no path in its product "
        f"automaton reaches its sub-task's end (still to do there: "
        f"{'; '.join(aut.pending(target_q)) or 'nothing'})"
    )
    err.robot = robot  # type: ignore[attr-defined]
    raise err


def _suffix(plan: RobotPlan, i: int) -> RobotPlan:
    return RobotPlan(
        plan.robot,
        plan.states[i:],
        plan.actions[i:],
        plan.weights[i:],
        plan.automaton_states[i:],
        plan.waits_for,
    )


def _check_prefix(plan: RobotPlan, done: Sequence[TSState]) -> None:
    if tuple(done) != plan.states[: len(done)]:
        for i, (a, b) in enumerate(zip(done, plan.states, strict=False)):
            if a != b:
                raise PlanningError(
                    f"{plan.robot}'s executed trace left its plan at step {i}: "
                    f"was at {tuple(a)}, plan says {tuple(b)}"
                )
        raise PlanningError(f"{plan.robot}'s executed trace is longer than its plan")


def reallocate_state_change(
    mission: Mission, plan: RobotPlan, executed: Sequence[TSState]
) -> RobotPlan:
    """Alg. 1 (local reallocation, unexpected state change; R3).

    ``executed[:-1]`` followed the plan; ``executed[-1]`` is ``s^Δ``. The new start is
    ``(δ_Q(Path_Q(m), L(Path_T(m))), s^Δ)`` (one state: the automaton is deterministic).
    If it lies on the remaining plan, the plan is reused from there (case 1.1); else
    Dijkstra on ``P^(r)`` to the plan's local accepting automaton state (case 1.2).
    Returns the plan from ``s^Δ`` on; raises InfeasibleError if there is none (go global).
    """
    if not executed:
        raise SpecificationError("executed trace is empty; it must end at the robot's state")
    pa = mission.products[plan.robot]
    *done, now = executed
    _check_prefix(plan, done)
    m = len(done) - 1
    q = plan.start_q if m < 0 else pa.next_q(plan.automaton_states[m], plan.states[m])
    node = PAState(q, TSState(*now))
    for i in range(m + 1, len(plan.states)):
        if plan.path[i] == node:
            return _suffix(plan, i)
    new = find_path(pa, node, plan.accept_q, plan.robot)
    return new.with_waits(plan.waits_for)


def reallocate_environment_change(
    mission: Mission, plan: RobotPlan, executed: Sequence[TSState], change: EnvironmentChange
) -> tuple[RobotPlan, frozenset]:
    """Alg. 2 (local reallocation, environment change; R4). Applies ``change`` to the
    robot's product (Def. 3), then keeps the remaining plan if it is still a path of
    the revised product, else searches from ``Path(m)`` to ``Path(acc)``'s automaton
    state. (Alg. 2 tests only ``R(t) ∩ edges(Path)``; a relabel can also break the
    plan, so every remaining transition is re-checked.) Returns the plan from the
    robot's current state and ``R(t)``; raises InfeasibleError if no path (go global).
    """
    if not executed:
        raise SpecificationError("executed trace is empty; it must end at the robot's state")
    _check_prefix(plan, executed)
    deleted = apply_change(mission, plan.robot, change)
    pa = mission.products[plan.robot]
    m = len(executed) - 1
    rest = plan.path[m:]
    if all(pa.has_edge(a, b) for a, b in itertools.pairwise(rest)):
        return _suffix(plan, m), deleted
    new = find_path(pa, rest[0], plan.accept_q, plan.robot)
    return new.with_waits(plan.waits_for), deleted


def reallocate_global(
    mission: Mission,
    plan: TeamPlan,
    executed: Mapping[str, Sequence[TSState]],
    failed: Iterable[str] = (),
    *,
    objective: str | None = None,
) -> TeamPlan:
    """Global reallocation over the synchronised team automaton ``R`` (Defs. 4, 5; R2, or
    R3/R4 when local fails).

    Synchronisation: every robot's current state becomes its initial TS state, newly
    failed robots lose all transitions (and leave the team order), and the executed
    traces, read in team order from ``plan.start_q``, give the synchronised automaton
    state ``q_sync``. Def. 5 adds per robot a transition from its run's first to its
    last automaton state; with a deterministic automaton these compose into the one
    synchronised transition ``q_start → q_sync`` used as the start of ``R``. Switch
    transitions are rebuilt with the decomposition set relative to ``q_sync`` (the
    obligations left are the tasks), so a half-done task of a failed robot can be
    continued by the first robot able to. Raises InfeasibleError naming the failed
    robots and what is left when no operational robot sequence can finish.
    """
    aut = mission.automaton
    current: dict[str, TSState] = {}
    q = plan.start_q
    for name in plan.plans:
        trace = list(executed.get(name, plan[name].states[:1]))
        if not trace:
            raise SpecificationError(f"executed trace of {name} is empty")
        labels = mission.robots[name].ts.labels
        for s in trace[:-1]:
            q = aut.delta[q][aut.letter(labels[TSState(*s)])]
        current[name] = TSState(*trace[-1])
    for name in failed:
        _robot(mission, name)
        if name not in mission.failed:
            fail_robot(mission, name, current[name])
    everyone = tuple(plan.plans)
    dropped = tuple(n for n in everyone if n in mission.failed)
    if q == aut.sink:
        raise InfeasibleError(
            "the executed traces already violate the specification; nothing can repair it"
        )
    alive = [n for n in everyone if n not in mission.failed]
    if q in aut.accepting or not alive:
        if q not in aut.accepting:
            raise InfeasibleError(
                f"every robot has failed ({', '.join(dropped)}); "
                f"still to do: {'; '.join(aut.pending(q))}"
            )
        idle = {n: RobotPlan(n, (current[n],), (), (), (q,)) for n in everyone}
        return TeamPlan(idle, tuple(alive), q, q, objective or mission.objective, 0, dropped)
    dset = decomposition_set(aut, start=q)
    team = mission.team(starts=current, start_q=q, decomposition=dset, robots=alive)
    try:
        new = mission.solve(team, alive, objective)
    except InfeasibleError as exc:
        why = f"after critical failures of {', '.join(dropped)}: " if dropped else ""
        err = InfeasibleError(f"global reallocation failed {why}{exc}")
        err.failed = dropped  # type: ignore[attr-defined]
        raise err from None
    plans = dict(new.plans)
    for n in dropped:
        plans[n] = RobotPlan(n, (current[n],), (), (), (new.final_q,))
    return TeamPlan(
        {n: plans[n] for n in everyone},
        tuple(alive),
        q,
        new.final_q,
        new.objective,
        new.explored,
        dropped,
    )
