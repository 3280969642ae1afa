"""Decomposition set (Def. 1), team automaton with switch transitions (Def. 2), the
search over it, and projection onto per-robot plans, seed 003 §II-B.

Team states are ``(r, q, s)``: robot index ``r`` in team order, automaton state ``q``,
TS state ``s`` of robot ``r``. Switch transitions ``(i, q, s) -> (i+1, q, s_0^(i+1))``
exist for ``q`` in the decomposition set and cost 0.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from teamtree.broker import InfeasibleError, SolverLimitError, SpecificationError
from teamtree.planners.ltl.automaton import AUTOMATA, Automaton, AutomatonCache
from teamtree.planners.ltl.model import (
    PAState,
    ProductAutomaton,
    RobotModel,
    TSState,
)
from teamtree.planners.ltl.shortest import PathStep
from teamtree.planners.ltl.syntax import Formula

__all__ = [
    "OBJECTIVES",
    "Mission",
    "RobotPlan",
    "TeamAutomaton",
    "TeamPathStep",
    "TeamPlan",
    "decomposition_set",
    "search_team",
]

OBJECTIVES = ("sum", "makespan")
TeamState = tuple[int, int, TSState]


def decomposition_set(
    automaton: Automaton, start: int | None = None, method: str = "tasks"
) -> frozenset[int]:
    """The decomposition set ``D ⊆ S_Q`` of Def. 1 (Schillinger et al.).

    ``method="tasks"`` (default): ``q ∈ D`` iff ``q`` is reachable from ``start``, can
    still reach ``F``, and its progressed formula holds only whole tasks: obligations of
    ``start`` itself (offline: the top-level conjuncts of φ) or one-step propositional
    ones (pending ``!X!p`` from the safety conjuncts). So a switch happens only between
    sub-tasks, never half-way through one, and ``w2·w1`` ordering is possible.
    ``method="witness"``: ``q ∈ D`` iff some words ``w1: start → q``, ``w2: q → F`` have
    ``w2·w1`` accepted (the authors' test, done exactly over the pair automaton instead
    of one shortest witness). It admits nearly every state, because ``w2`` may redo the
    whole task; the plans' synchronisation points then carry the ordering.
    ``start`` defaults to the initial state; global reallocation passes the synchronised
    state, so the obligations left at that moment become the tasks.
    """
    q0 = automaton.initial if start is None else start
    if method == "tasks":
        delta = np.asarray(automaton.delta, dtype=np.int64)
        acc = np.zeros(automaton.n_states, dtype=bool)
        acc[list(automaton.accepting)] = True
        live = _reach(delta, [q0]) & _coreach(delta, acc)
        tasks = automaton.obligations(q0)
        return frozenset(
            int(q)
            for q in np.flatnonzero(live)
            if q == q0 or q in automaton.accepting or automaton.task_state(int(q), tasks)
        )
    if method != "witness":
        raise SpecificationError(f"method must be 'tasks' or 'witness', not {method!r}")
    return _witness_set(automaton, q0)


def _witness_set(automaton: Automaton, q0: int) -> frozenset[int]:
    n = automaton.n_states
    delta = np.asarray(automaton.delta, dtype=np.int64)
    acc = np.zeros(n, dtype=bool)
    acc[list(automaton.accepting)] = True

    # candidates: reachable from q0 and co-reachable to F
    fwd = _reach(delta, [q0])
    back = _coreach(delta, acc)
    cand = np.flatnonzero(fwd & back)
    if cand.size == 0:
        return frozenset()
    out: set[int] = set()
    chunk = max(1, 4_000_000 // (n * n))
    for lo in range(0, cand.size, chunk):
        xs = cand[lo : lo + chunk]
        m = xs.size
        # BFS 1: from (x, a=x, b=q0); P[x, p] if some (x, f∈F, p) is reached
        r1 = _triple_bfs(delta, m, np.arange(m), xs, np.full(m, q0))
        p = r1.reshape(m, n, n)[:, acc, :].any(axis=1)  # (m, n)
        # BFS 2: from (x, a=q0, b=p) for P[x, p]; x ∈ D if (x, a=x, b∈F) is reached
        xi, pi = np.nonzero(p)
        if xi.size == 0:
            continue
        r2 = _triple_bfs(delta, m, xi, np.full(xi.size, q0), pi).reshape(m, n, n)
        hit = r2[np.arange(m), xs, :][:, acc].any(axis=1)
        out.update(int(x) for x in xs[hit])
    return frozenset(out)


def _reach(delta: np.ndarray, starts: Sequence[int]) -> np.ndarray:
    seen = np.zeros(delta.shape[0], dtype=bool)
    seen[list(starts)] = True
    frontier = np.array(list(starts), dtype=np.int64)
    while frontier.size:
        nxt = np.unique(delta[frontier].ravel())
        nxt = nxt[~seen[nxt]]
        seen[nxt] = True
        frontier = nxt
    return seen


def _coreach(delta: np.ndarray, target: np.ndarray) -> np.ndarray:
    good = target.copy()
    while True:
        grown = good | good[delta].any(axis=1)
        if (grown == good).all():
            return good
        good = grown


def _triple_bfs(
    delta: np.ndarray, m: int, x: np.ndarray, a: np.ndarray, b: np.ndarray
) -> np.ndarray:
    """Reachable set of triples (x, a, b) under simultaneous letters on a and b."""
    n = delta.shape[0]
    nn = n * n
    seen = np.zeros(m * nn, dtype=bool)
    frontier = np.unique(x * nn + a * n + b)
    seen[frontier] = True
    while frontier.size:
        fx, rest = np.divmod(frontier, nn)
        fa, fb = np.divmod(rest, n)
        nxt = (fx[:, None] * nn + delta[fa] * n + delta[fb]).ravel()
        nxt = np.unique(nxt)
        nxt = nxt[~seen[nxt]]
        seen[nxt] = True
        frontier = nxt
    return seen


class TeamAutomaton:
    """The team automaton ``G`` of Def. 2 (and, with a synchronised ``start_q`` and current
    ``starts``, the synchronised team automaton ``R`` of Def. 4), kept implicit."""

    def __init__(
        self,
        automaton: Automaton,
        products: Sequence[ProductAutomaton],
        starts: Sequence[TSState],
        decomposition: frozenset[int],
        start_q: int | None = None,
    ):
        if len(products) != len(starts) or not products:
            raise SpecificationError("a team needs at least one robot, each with a start state")
        self.automaton = automaton
        self.products = list(products)
        self.starts = list(starts)
        self.decomposition = decomposition
        self.start_q = automaton.initial if start_q is None else start_q
        self.initial: TeamState = (0, self.start_q, self.starts[0])

    def successors(self, node: TeamState) -> Iterator[tuple[TeamState, str, float]]:
        r, q, s = node
        for (nq, ns), t in self.products[r].successors(PAState(q, s)):
            yield (r, nq, ns), t.action, t.weight
        if q in self.decomposition and r + 1 < len(self.products):
            yield (r + 1, q, self.starts[r + 1]), "switch", 0.0

    def is_accepting(self, node: TeamState) -> bool:
        return node[1] in self.automaton.accepting


TeamPathStep = PathStep[TeamState]  # (state reached, action taken to reach it, weight)


def search_team(
    team: TeamAutomaton, objective: str = "sum", *, max_states: int | None = None
) -> tuple[list[TeamPathStep], int]:
    """Cheapest path from the initial team state to an accepting one.

    ``sum`` (the authors' objective): Dijkstra on the total action weight.
    ``makespan``: the largest per-robot total, by a label-setting search over
    ``(max of finished robots, current robot)`` pairs (Pareto labels); ties go to the
    smaller total. Returns the path (first step has action ``""``) and the number of
    team states expanded. Raises InfeasibleError when no accepting state is reachable,
    SolverLimitError when ``max_states`` expansions were not enough.
    """
    if objective not in OBJECTIVES:
        raise SpecificationError(f"objective must be one of {OBJECTIVES}, not {objective!r}")
    if team.start_q == team.automaton.sink:
        left = "; ".join(team.automaton.pending(team.start_q)) or "nothing"
        raise InfeasibleError(
            "no word over the labels these robots can produce satisfies the specification "
            f"from here (rejecting state); still to do: {left}"
        )
    if objective == "sum":
        return _dijkstra(team, max_states)
    return _makespan(team, max_states)


def _dijkstra(team: TeamAutomaton, max_states: int | None) -> tuple[list[TeamPathStep], int]:
    coded = _CodedTeam(team)
    path, expanded = coded.search(max_states)
    if path is None:
        raise _no_path(team, expanded)
    steps = [(coded.decode(n), action, w) for n, action, w in path]
    return [(team.initial, "", 0.0), *steps], expanded


_Row = tuple[int, tuple[tuple[int, float], ...], int]
"""A robot in a TS state: its letter, its transitions out (target's code less ``q``,
weight), the code less ``q`` of the next robot's start (-1 for the last robot)."""


class _CodedTeam:
    """Dijkstra on the team automaton with states numbered ``(r * n_s + s) * n_q + q``
    (``n_s`` TS states, each robot's ``(r, s)`` a row of ``n_q`` team states).

    The same graph as `TeamAutomaton.successors`, expanded in the same order with the
    same tie-breaking as `shortest_path`, so it finds the same plan after expanding the
    same states. The team search is where offline allocation and global reallocation
    spend their time, so the loop does little per state:

    - The queue is a bucket per distinct distance, holding the states pushed at that
      distance in push order, and a heap of the distances. Taking the smallest distance,
      then its states in push order, is the order of `shortest_path`'s heap of
      ``(distance, push count, state)``. Distances are sums of a few map and action
      weights, so they repeat (global reallocation on the hospital at 30 robots: about
      19,400 pushes at 165 distances): the heap is small and compares floats, not
      tuples. This needs weights >= 0 (nothing is pushed below the distance being
      expanded), as Dijkstra does; a negative weight raises SpecificationError.
    - Distances are a list indexed by the state's number. A state is pushed again only
      with a smaller distance, so an entry whose distance is above the state's current
      one is stale, and the one that is not is the state's only expansion.
    - A parent is the previous state's number (no tuple per push); the walk back finds
      the action and weight again in the robot's TS.
    - Each robot's TS state is read from its TS once, when first expanded, into a row:
      its letter, its transitions as target numbers less ``q``, and the number of the
      next robot's start less ``q`` (for a switch).
    """

    def __init__(self, team: TeamAutomaton):
        self.team = team
        self.n_q = team.automaton.n_states
        self.n_r = len(team.products)
        self.ids: dict[TSState, int] = {}
        self.states: list[TSState] = []
        for pa in team.products:  # every TS state numbered first: codes are list indices
            for s in pa.ts.succ:
                self._id(s)
        for s in team.starts:
            self._id(s)
        self.n_s = len(self.states)
        self.size = self.n_r * self.n_s * self.n_q
        self.rows: list[_Row | None] = [None] * (self.n_r * self.n_s)
        self.start = self.encode(team.initial)

    def _id(self, s: TSState) -> int:
        i = self.ids.get(s)
        if i is None:
            i = self.ids[s] = len(self.states)
            self.states.append(s)
        return i

    def encode(self, node: TeamState) -> int:
        r, q, s = node
        return (r * self.n_s + self.ids[s]) * self.n_q + q

    def decode(self, code: int) -> TeamState:
        rs, q = divmod(code, self.n_q)
        r, sid = divmod(rs, self.n_s)
        return (r, q, self.states[sid])

    def _row(self, rs: int) -> _Row:
        """Robot ``r``'s letter in TS state ``s`` (``rs = r * n_s + s``), its transitions
        out of it as ``(target's code less q, weight)``, and the code less ``q`` of the
        next robot's start (-1 for the last robot)."""
        n_s, n_q = self.n_s, self.n_q
        r, sid = divmod(rs, n_s)
        pa = self.team.products[r]
        s = self.states[sid]
        ids, base = self.ids, r * n_s
        trans = []
        for t in pa.ts.successors(s):
            if t.weight < 0:
                raise SpecificationError(
                    f"transition {tuple(s)} -> {tuple(t.target)} of robot {r} in team order "
                    f"has weight {t.weight}; weights must be >= 0"
                )
            trans.append(((base + ids[t.target]) * n_q, t.weight))
        nxt = -1
        if r + 1 < self.n_r:
            nxt = (base + n_s + self.ids[self.team.starts[r + 1]]) * n_q
        return pa.letter(s), tuple(trans), nxt

    def _walk_back(self, parent: dict[int, int], code: int) -> list[PathStep[int]]:
        """The steps from the start to ``code``; a step within one robot is its TS's only
        transition between the two TS states, a step to the next robot a switch."""
        path: list[PathStep[int]] = []
        while code != self.start:
            prev = parent[code]
            r, _, s = self.decode(code)
            pr, _, ps = self.decode(prev)
            if pr != r:
                path.append((code, "switch", 0.0))
            else:
                t = self.team.products[r].ts.succ[ps][s]
                path.append((code, t.action, t.weight))
            code = prev
        path.reverse()
        return path

    def search(self, max_states: int | None) -> tuple[list[PathStep[int]] | None, int]:
        """`shortest_path` from the initial team state to an accepting one."""
        aut = self.team.automaton
        delta, sink, accepting = aut.delta, aut.sink, aut.accepting
        switch = self.team.decomposition
        n_q, rows, make_row = self.n_q, self.rows, self._row
        limit = self.size + 1 if max_states is None else max_states
        start = self.start
        dist = [float("inf")] * self.size  # by code
        dist[start] = 0.0
        expanded = 0
        parent: dict[int, int] = {}  # the action and weight are found again on the way back
        buckets: dict[float, list[int]] = {0.0: [start]}  # distance: codes in push order
        levels = [0.0]  # the distances that have a bucket, as a heap
        push, pop = heapq.heappush, heapq.heappop
        while levels:
            d = pop(levels)
            bucket = buckets[d]
            for code in bucket:  # grows while read: pushes at distance d land here
                if dist[code] < d:
                    continue  # stale: pushed again since, at a smaller distance
                expanded += 1
                rs, q = divmod(code, n_q)
                if q in accepting:
                    return self._walk_back(parent, code), expanded
                if expanded >= limit:
                    raise SolverLimitError(
                        f"team search stopped after {expanded} states (max_states={max_states})"
                    )
                row = rows[rs]
                if row is None:
                    row = rows[rs] = make_row(rs)
                letter, trans, next_robot = row
                nq = delta[q][letter]
                if nq != sink:
                    for t, w in trans:
                        nxt = t + nq
                        nd = d + w
                        if nd < dist[nxt]:
                            dist[nxt] = nd
                            parent[nxt] = code
                            same = buckets.get(nd)
                            if same is None:
                                buckets[nd] = [nxt]
                                push(levels, nd)
                            else:
                                same.append(nxt)
                if next_robot >= 0 and q in switch:
                    nxt = next_robot + q
                    if d < dist[nxt]:  # a switch costs 0
                        dist[nxt] = d
                        parent[nxt] = code
                        bucket.append(nxt)
            del buckets[d]
        return None, expanded


def _makespan(team: TeamAutomaton, max_states: int | None) -> tuple[list[TeamPathStep], int]:
    start = team.initial
    # label: (finished max, current robot cost, total, node, parent label index, action, w)
    labels: list[tuple[float, float, float, TeamState, int, str, float]] = []
    front: dict[TeamState, list[tuple[float, float]]] = {}
    tie = itertools.count()
    heap: list[tuple[float, float, int, int]] = []

    def push(m: float, c: float, total: float, node: TeamState, par: int, act: str, w: float):
        for om, oc in front.get(node, ()):
            if om <= m and oc <= c:
                return
        labels.append((m, c, total, node, par, act, w))
        heapq.heappush(heap, (max(m, c), total, next(tie), len(labels) - 1))

    push(0.0, 0.0, 0.0, start, -1, "", 0.0)
    expanded = 0
    while heap:
        _, _, _, li = heapq.heappop(heap)
        m, c, total, node, _, _, _ = labels[li]
        pareto = front.setdefault(node, [])
        if any(om <= m and oc <= c for om, oc in pareto):
            continue
        pareto[:] = [(om, oc) for om, oc in pareto if not (m <= om and c <= oc)]
        pareto.append((m, c))
        expanded += 1
        if team.is_accepting(node):
            path: list[TeamPathStep] = []
            cur = li
            while cur >= 0:
                _, _, _, nd, par, act, w = labels[cur]
                path.append((nd, act, w))
                cur = par
            path.reverse()
            return path, expanded
        if max_states is not None and expanded >= max_states:
            raise SolverLimitError(
                f"makespan search stopped after {expanded} labels (max_states={max_states})"
            )
        for nxt, action, w in team.successors(node):
            if action == "switch":
                push(max(m, c), 0.0, total, nxt, li, action, w)
            else:
                push(m, c + w, total + w, nxt, li, action, w)
    raise _no_path(team, expanded)


def _no_path(team: TeamAutomaton, explored: int) -> InfeasibleError:
    left = "; ".join(team.automaton.pending(team.start_q)) or "nothing"
    err = InfeasibleError(
        f"no robot sequence completes the mission: explored {explored} team states "
        f"without reaching an accepting one; still to do: {left}"
    )
    err.remaining = left  # type: ignore[attr-defined]
    return err


@dataclass(frozen=True)
class RobotPlan:
    """One robot's projected plan: TS states, the actions between them, the automaton
    state at each TS state (before its label is read), and whom to wait for."""

    robot: str
    states: tuple[TSState, ...]
    actions: tuple[str, ...]
    weights: tuple[float, ...]
    automaton_states: tuple[int, ...]
    waits_for: tuple[str, ...] = ()

    @property
    def cost(self) -> float:
        return float(sum(self.weights))

    @property
    def start_q(self) -> int:
        return self.automaton_states[0]

    @property
    def accept_q(self) -> int:
        """``Path^(r)(acc)``'s automaton state: where this robot's sub-task ends."""
        return self.automaton_states[-1]

    @property
    def path(self) -> list[PAState]:
        return [PAState(q, s) for q, s in zip(self.automaton_states, self.states, strict=True)]

    @property
    def idle(self) -> bool:
        return not self.actions

    def with_waits(self, waits: Iterable[str]) -> RobotPlan:
        return RobotPlan(
            self.robot,
            self.states,
            self.actions,
            self.weights,
            self.automaton_states,
            tuple(waits),
        )


@dataclass(frozen=True)
class TeamPlan:
    """Per-robot plans in team order; ``start_q`` is the automaton state the plan starts
    from (the initial state offline, the synchronised state after global reallocation)."""

    plans: Mapping[str, RobotPlan]
    order: tuple[str, ...]
    start_q: int
    final_q: int
    objective: str = "sum"
    explored: int = 0
    dropped: tuple[str, ...] = field(default=())

    @property
    def cost(self) -> float:
        return float(sum(p.cost for p in self.plans.values()))

    @property
    def makespan(self) -> float:
        return max((p.cost for p in self.plans.values()), default=0.0)

    def __getitem__(self, robot: str) -> RobotPlan:
        return self.plans[robot]


class Mission:
    """A global LTL mission for a team: the automaton over every label the robots can
    produce, each robot's product automaton, and the decomposition set.

    Robots' transition systems are copied; environment changes (Alg. 2) and critical
    failures edit the copies held here. The automaton is read-only and comes from
    ``automata`` (by default the process's `AUTOMATA`), so missions of the same
    specification over the same labels share one. Blocks only on computation; raises
    SpecificationError for bad input and InfeasibleError if the formula cannot be met.
    """

    def __init__(
        self,
        formula: Formula | str,
        robots: Sequence[RobotModel],
        *,
        objective: str = "sum",
        extra_labels: Iterable[Iterable[str]] = (),
        max_states: int | None = None,
        automata: AutomatonCache = AUTOMATA,
    ):
        if objective not in OBJECTIVES:
            raise SpecificationError(f"objective must be one of {OBJECTIVES}, not {objective!r}")
        names = [r.name for r in robots]
        if not robots or len(set(names)) != len(names):
            raise SpecificationError(f"robots need unique names, got {names}")
        self.robots: dict[str, RobotModel] = {
            r.name: RobotModel(r.name, r.ts.copy(), r.kind) for r in robots
        }
        alphabet = {lab for r in self.robots.values() for lab in r.ts.labels.values()}
        alphabet |= {frozenset(lab) for lab in extra_labels}
        self.automaton = automata.get(formula, alphabet)
        self.formula = self.automaton.formula
        self.products = {n: ProductAutomaton(self.automaton, r.ts) for n, r in self.robots.items()}
        self.decomposition = decomposition_set(self.automaton)
        self.objective = objective
        self.max_states = max_states
        self.failed: set[str] = set()
        self.deleted: dict[str, set] = {}  # R(t) per robot (§IV-B)

    @property
    def order(self) -> tuple[str, ...]:
        return tuple(self.robots)

    def team(
        self,
        starts: Mapping[str, TSState] | None = None,
        start_q: int | None = None,
        decomposition: frozenset[int] | None = None,
        robots: Sequence[str] | None = None,
    ) -> TeamAutomaton:
        names = list(robots if robots is not None else self.order)
        st = starts or {}
        return TeamAutomaton(
            self.automaton,
            [self.products[n] for n in names],
            [st.get(n, self.robots[n].initial) for n in names],
            self.decomposition if decomposition is None else decomposition,
            start_q,
        )

    def allocate(self, objective: str | None = None) -> TeamPlan:
        """Offline allocation (§II-B): search ``G`` and project onto per-robot plans."""
        team = self.team()
        return self.solve(team, self.order, objective)

    def solve(
        self, team: TeamAutomaton, names: Sequence[str], objective: str | None = None
    ) -> TeamPlan:
        obj = objective or self.objective
        path, explored = search_team(team, obj, max_states=self.max_states)
        return project(self, path, list(names), team, obj, explored)


def project(
    mission: Mission,
    path: list[TeamPathStep],
    names: list[str],
    team: TeamAutomaton,
    objective: str,
    explored: int,
) -> TeamPlan:
    """Project a team path onto per-robot plans, then add synchronisation points."""
    segs: dict[int, list[tuple[TeamState, str, float]]] = {}
    for node, action, w in path:
        segs.setdefault(node[0], []).append((node, action, w))
    final_q = path[-1][0][1]
    plans: dict[str, RobotPlan] = {}
    for i, name in enumerate(names):
        seg = segs.get(i)
        if not seg:
            plans[name] = RobotPlan(name, (team.starts[i],), (), (), (final_q,))
            continue
        plans[name] = RobotPlan(
            name,
            tuple(n[2] for n, _, _ in seg),
            tuple(a for _, a, _ in seg[1:]),
            tuple(w for _, _, w in seg[1:]),
            tuple(n[1] for n, _, _ in seg),
        )
    plans = _sync_points(mission, plans, names, team.start_q)
    return TeamPlan(plans, tuple(names), team.start_q, final_q, objective, explored)


def robot_word(mission: Mission, plan: RobotPlan) -> list[frozenset[str]]:
    """The labels a plan reads: every state's but the last (read when leaving)."""
    ts = mission.robots[plan.robot].ts
    return [ts.labels[s] for s in plan.states[:-1]]


def _sync_points(
    mission: Mission, plans: dict[str, RobotPlan], names: list[str], start_q: int
) -> dict[str, RobotPlan]:
    """Robot ``j`` waits for an earlier robot ``i`` when moving ``j``'s sub-task in front of
    ``i``'s breaks acceptance: Def. 1 promises independence only for the witnesses
    it was checked on, so the actual sub-words are checked here."""
    aut = mission.automaton
    words = [robot_word(mission, plans[n]) for n in names]
    busy = [i for i, w in enumerate(words) if w]
    waits: dict[int, list[str]] = {i: [] for i in range(len(names))}
    for a, i in enumerate(busy):
        for j in busy[a + 1 :]:
            order = [k for k in busy if k != j]
            order.insert(order.index(i), j)
            q = start_q
            for k in order:
                q = aut.run(q, words[k])
            if q not in aut.accepting:
                waits[j].append(names[i])
    return {n: plans[n].with_waits(waits[i]) for i, n in enumerate(names)}
