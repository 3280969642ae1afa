"""Per-robot transition systems (region map × operating states) and product automata,
seed 003 §II-A.

A TS state is ``(region, mode)``, labelled ``{region, mode}``. Moves follow the region
map and keep the mode; mode actions (``pick``, ``drop``, ``start_training``, …) keep the
region and are guarded by the regions they are allowed in. Every state has a ``stay``
self-loop: the product reads a state's label when the robot *leaves* it
(``q' ∈ δ_Q(q, L(s))``, §II-A), so staying is how a robot "uses" the state it is in.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from teamtree.broker import SpecificationError
from teamtree.planners.ltl.automaton import Automaton

__all__ = [
    "Edge",
    "ModeAction",
    "PAState",
    "ProductAutomaton",
    "RegionMap",
    "RobotModel",
    "TSState",
    "Transition",
    "TransitionSystem",
]


class TSState(NamedTuple):
    """A transition-system state: where the robot is and what it is doing."""

    region: str
    mode: str


class PAState(NamedTuple):
    """A product-automaton state ``(s_Q, s_T)``."""

    q: int
    s: TSState


@dataclass(frozen=True, slots=True)
class Edge:
    """A map edge ``source -> target``; ``by_kind`` overrides the weight per robot kind."""

    source: str
    target: str
    weight: float = 10.0
    by_kind: Mapping[str, float] = field(default_factory=dict)

    def weight_for(self, kind: str) -> float:
        return self.by_kind.get(kind, self.weight)


@dataclass(frozen=True)
class RegionMap:
    """A topological map: named regions with coordinates and directed, weighted edges."""

    regions: Mapping[str, tuple[float, float]]
    edges: Sequence[Edge]
    stay_weight: float = 0.01

    def __post_init__(self) -> None:
        for e in self.edges:
            for end in (e.source, e.target):
                if end not in self.regions:
                    raise SpecificationError(f"edge {e.source}->{e.target}: unknown region {end!r}")


@dataclass(frozen=True, slots=True)
class ModeAction:
    """An operating-state action ``source -> target``, allowed only in ``regions``
    (None: anywhere)."""

    name: str
    source: str
    target: str
    weight: float = 10.0
    regions: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class Transition:
    target: TSState
    action: str
    weight: float


class TransitionSystem:
    """``T = (S_T, s_0, A_T, Π_T, L)`` with editable transitions and labels (for Alg. 2)."""

    def __init__(
        self,
        initial: TSState,
        transitions: Mapping[TSState, Iterable[Transition]],
        labels: Mapping[TSState, frozenset[str]] | None = None,
    ):
        self.succ: dict[TSState, dict[TSState, Transition]] = {}
        for s, ts in transitions.items():
            self.succ.setdefault(s, {})
            for t in ts:
                self.succ[s][t.target] = t
                self.succ.setdefault(t.target, {})
        self.labels: dict[TSState, frozenset[str]] = {
            s: frozenset((s.region, s.mode)) for s in self.succ
        }
        if labels:
            self.labels.update(labels)
        if initial not in self.succ:
            raise SpecificationError(f"initial state {initial} is not a state of the system")
        self.initial = initial

    @classmethod
    def from_map(
        cls,
        region_map: RegionMap,
        modes: Sequence[str],
        actions: Sequence[ModeAction],
        initial: TSState | tuple[str, str],
        *,
        kind: str = "",
    ) -> TransitionSystem:
        """Region map × operating states; moves keep the mode, actions keep the region."""
        for a in actions:
            if a.source not in modes or a.target not in modes:
                raise SpecificationError(f"action {a.name!r}: modes must be among {list(modes)}")
            for r in a.regions or ():
                if r not in region_map.regions:
                    raise SpecificationError(f"action {a.name!r}: unknown region {r!r}")
        trans: dict[TSState, list[Transition]] = {}
        for region in region_map.regions:
            for mode in modes:
                s = TSState(region, mode)
                out = trans.setdefault(s, [])
                out.append(Transition(s, "stay", region_map.stay_weight))
                for a in actions:
                    if a.source == mode and (a.regions is None or region in a.regions):
                        out.append(Transition(TSState(region, a.target), a.name, a.weight))
        for e in region_map.edges:
            for mode in modes:
                trans[TSState(e.source, mode)].append(
                    Transition(TSState(e.target, mode), f"goto_{e.target}", e.weight_for(kind))
                )
        init = TSState(*initial)
        if init not in trans:
            raise SpecificationError(f"initial state {tuple(init)} is not a (region, mode) pair")
        return cls(init, trans)

    @property
    def states(self) -> list[TSState]:
        return list(self.succ)

    def label(self, s: TSState) -> frozenset[str]:
        return self.labels[s]

    def successors(self, s: TSState) -> Iterator[Transition]:
        return iter(self.succ.get(s, {}).values())

    def predecessors(self, s: TSState) -> list[TSState]:
        return [p for p, out in self.succ.items() if s in out]

    def transition(self, s: TSState, t: TSState) -> Transition | None:
        return self.succ.get(s, {}).get(t)

    def edges(self) -> Iterator[tuple[TSState, TSState]]:
        for s, out in self.succ.items():
            for t in out:
                yield (s, t)

    def copy(self) -> TransitionSystem:
        clone = TransitionSystem.__new__(TransitionSystem)
        clone.succ = {s: dict(out) for s, out in self.succ.items()}
        clone.labels = dict(self.labels)
        clone.initial = self.initial
        return clone


@dataclass
class RobotModel:
    """A team member: its name, kind (for edge weights) and transition system."""

    name: str
    ts: TransitionSystem
    kind: str = ""

    @property
    def initial(self) -> TSState:
        return self.ts.initial


class ProductAutomaton:
    """``P = Q ⊗ T`` (§II-A), kept implicit: successors are computed from Q and T on demand,
    so edits to T (Alg. 2, Def. 3) are reflected at once. Transitions into the rejecting
    sink of Q are left out (no accepting state is reachable from there).
    """

    def __init__(self, automaton: Automaton, ts: TransitionSystem):
        self.automaton = automaton
        self.ts = ts
        self._letters: dict[frozenset[str], int] = {}

    def letter(self, s: TSState) -> int:
        label = self.ts.labels[s]
        i = self._letters.get(label)
        if i is None:
            i = self.automaton.letter(label)
            self._letters[label] = i
        return i

    def next_q(self, q: int, s: TSState) -> int:
        """``δ_Q(q, L(s))``: the automaton state after the robot leaves ``s``."""
        return self.automaton.delta[q][self.letter(s)]

    def successors(self, node: PAState) -> Iterator[tuple[PAState, Transition]]:
        q, s = node
        nq = self.automaton.delta[q][self.letter(s)]
        if nq == self.automaton.sink:
            return
        for t in self.ts.succ.get(s, {}).values():
            yield PAState(nq, t.target), t

    def has_edge(self, a: PAState, b: PAState) -> bool:
        if self.ts.transition(a.s, b.s) is None:
            return False
        return self.next_q(a.q, a.s) == b.q
