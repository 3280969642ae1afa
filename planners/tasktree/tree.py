"""Task trees: THEN/AND/OR goal nodes over behaviour leaves (seed 000 §2.2, Fig. 2).

A tree is immutable plain data. It is built from a compact string such as
``AND(THEN(cup, AND(sugar, tea_pot)), THEN(sandwich, OR(orange, apple), burger))``
(a bare name is ``PLACE(object=name)``) or from a dict, which is what a TOML config
gives. Node ids are stable: the path of child indexes from the root (``root/0/1``),
unless the dict form names a node with ``id``; its children's paths then start from
that name (``food/1/0``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from teamtree.broker import SpecificationError
from teamtree.planners.tasktree.limits import (
    MAX_TREE_DEPTH,
    MAX_TREE_NODES,
    check_tree_limits,
    check_tree_shape,
)
from teamtree.planners.tasktree.node_kind import NodeKind

__all__ = [
    "DEFAULT_BEHAVIOR",
    "NodeKind",
    "TaskNode",
    "TaskTree",
    "parse_tree",
    "tree_from_dict",
]

DEFAULT_BEHAVIOR = "PLACE"
"""The behaviour a bare leaf name stands for: ``cup`` is ``PLACE(object=cup)``."""

_ID_BAD = re.compile(r"[+#$\s]")
_ROOT = "root"

ParamValue = str | int | float | bool


_GOALS = {"then": NodeKind.THEN, "and": NodeKind.AND, "or": NodeKind.OR}


@dataclass(frozen=True)
class TaskNode:
    """One node of a task tree.

    ``id`` is stable and unique in the tree; ``behavior`` and ``params`` are set on
    leaves only (``params`` as a sorted tuple of pairs, so nodes are hashable).
    """

    id: str
    kind: NodeKind
    children: tuple[TaskNode, ...] = ()
    behavior: str | None = None
    params: tuple[tuple[str, ParamValue], ...] = ()
    name: str | None = None

    @property
    def is_leaf(self) -> bool:
        """True for behaviour leaves."""
        return self.kind is NodeKind.BEHAVIOR

    @property
    def param_dict(self) -> dict[str, ParamValue]:
        """The leaf's parameters as a dict."""
        return dict(self.params)

    @property
    def label(self) -> str:
        """Human-readable label: ``PLACE(cup)``, ``MOVE(x=1)`` or ``THEN``."""
        if not self.is_leaf:
            return self.kind.value.upper()
        args = [
            _fmt_value(v) if k == "object" else f"{k}={_fmt_value(v)}"
            for k, v in sorted(self.params, key=lambda kv: (kv[0] != "object", kv[0]))
        ]
        return f"{self.behavior}({', '.join(args)})"

    def to_string(self) -> str:
        """The compact form; ``parse_tree`` reads it back to an equal tree (path ids)."""
        if self.is_leaf:
            return self.label
        return f"{self.kind.value.upper()}({', '.join(c.to_string() for c in self.children)})"

    def to_dict(self) -> dict[str, Any]:
        """The dict form (TOML-friendly); ``tree_from_dict`` reads it back."""
        out: dict[str, Any] = {"id": self.id}
        if self.name is not None:
            out["name"] = self.name
        if self.is_leaf:
            out["behavior"] = self.behavior
            out["params"] = dict(self.params)
        else:
            out["type"] = self.kind.value
            out["children"] = [c.to_dict() for c in self.children]
        return out


def _fmt_value(v: ParamValue) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*", v):
        return v
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(v)


@dataclass(frozen=True)
class TaskTree:
    """An immutable task tree with lookup tables by id.

    Raises SpecificationError (from the constructor) when ids repeat or are malformed.
    """

    root: TaskNode
    nodes: Mapping[str, TaskNode] = field(init=False, repr=False, compare=False)
    parents: Mapping[str, str | None] = field(init=False, repr=False, compare=False)
    leaves: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        nodes: dict[str, TaskNode] = {}
        parents: dict[str, str | None] = {}
        leaves: list[str] = []
        stack: list[tuple[TaskNode, str | None]] = [(self.root, None)]
        while stack:
            node, parent = stack.pop()
            if not node.id or _ID_BAD.search(node.id):
                raise SpecificationError(
                    f"node id {node.id!r} is empty or contains one of + # $ or a space"
                )
            if node.id in nodes:
                raise SpecificationError(f"node id {node.id!r} appears twice in the tree")
            nodes[node.id] = node
            parents[node.id] = parent
            if node.is_leaf:
                leaves.append(node.id)
            stack.extend((c, node.id) for c in reversed(node.children))
        object.__setattr__(self, "nodes", nodes)
        object.__setattr__(self, "parents", parents)
        object.__setattr__(self, "leaves", tuple(leaves))

    def __getitem__(self, node_id: str) -> TaskNode:
        try:
            return self.nodes[node_id]
        except KeyError:
            raise KeyError(f"no node {node_id!r} in the tree") from None

    def __iter__(self) -> Iterator[TaskNode]:
        """Pre-order, children left to right."""
        stack = [self.root]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def __len__(self) -> int:
        return len(self.nodes)

    def ancestors(self, node_id: str) -> Iterator[str]:
        """Ids from the parent of ``node_id`` up to the root."""
        parent = self.parents[node_id]
        while parent is not None:
            yield parent
            parent = self.parents[parent]

    def leaf_ids(self, node_id: str) -> tuple[str, ...]:
        """Leaves under ``node_id`` (itself if it is a leaf), left to right."""
        node = self[node_id]
        if node.is_leaf:
            return (node.id,)
        return tuple(n.id for n in _iter_from(node) if n.is_leaf)

    def find(self, key: str) -> str:
        """The id of the node with id, name or leaf object ``key``; raises KeyError if not one."""
        if key in self.nodes:
            return key
        hits = [
            n.id for n in self if n.name == key or (n.is_leaf and n.param_dict.get("object") == key)
        ]
        if len(hits) != 1:
            raise KeyError(f"{len(hits)} nodes match {key!r} (need exactly one)")
        return hits[0]

    def to_string(self) -> str:
        """Compact form of the whole tree."""
        return self.root.to_string()

    def to_dict(self) -> dict[str, Any]:
        """Dict form of the whole tree."""
        return self.root.to_dict()


def _iter_from(node: TaskNode) -> Iterator[TaskNode]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _leaf(
    node_id: str, behavior: str, params: Mapping[str, ParamValue], name: str | None
) -> TaskNode:
    return TaskNode(
        id=node_id,
        kind=NodeKind.BEHAVIOR,
        behavior=behavior,
        params=tuple(sorted(params.items())),
        name=name,
    )


# ---------------------------------------------------------------- compact string parser

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<str>"(?:[^"\\]|\\.)*")
      | (?P<num>[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![A-Za-z_]))
      | (?P<ident>[A-Za-z_][A-Za-z0-9_.\-]*)
      | (?P<punct>[(),=])
    )""",
    re.VERBOSE,
)


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks: list[tuple[str, str, int]] = []
        pos = 0
        while True:
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos >= len(text):
                break
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                self.fail(f"unexpected character {text[pos]!r}", pos)
            kind = m.lastgroup or ""
            self.toks.append((kind, m.group(kind), m.start(kind)))
            pos = m.end()
        self.i = 0
        self.nodes = 0

    def fail(self, msg: str, pos: int | None = None) -> None:
        if pos is None:
            pos = self.toks[self.i][2] if self.i < len(self.toks) else len(self.text)
        start = max(0, pos - 60)  # a long text: the part around the position
        head = "..." if start else ""
        tail = "..." if len(self.text) > pos + 60 else ""
        pointer = f"{head}{self.text[start : pos + 60]}{tail}\n{' ' * (len(head) + pos - start)}^"
        raise SpecificationError(f"task tree, position {pos}: {msg}\n{pointer}")

    def peek(self) -> tuple[str, str, int] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, value: str | None = None, kind: str | None = None) -> tuple[str, str, int]:
        tok = self.peek()
        want = repr(value) if value else (kind or "a token")
        if tok is None:
            self.fail(f"expected {want}, found the end of the text")
        assert tok is not None
        if (value is not None and tok[1] != value) or (kind is not None and tok[0] != kind):
            self.fail(f"expected {want}, found {tok[1]!r}")
        self.i += 1
        return tok

    def node(self, path: str, depth: int = 1) -> TaskNode:
        tok = self.peek()
        if tok is None or tok[0] != "ident":
            self.fail("expected a goal (THEN, AND, OR) or a behaviour name")
        assert tok is not None
        self.nodes += 1
        if depth > MAX_TREE_DEPTH or self.nodes > MAX_TREE_NODES:  # before it recurses
            try:
                check_tree_shape(depth, self.nodes, "task tree")
            except SpecificationError as exc:
                self.fail(str(exc).removeprefix("task tree: "))
        name = tok[1]
        self.i += 1
        nxt = self.peek()
        if name.lower() in _GOALS:
            if nxt is None or nxt[1] != "(":
                self.fail(f"{name} needs children in parentheses, e.g. {name.upper()}(a, b)")
            self.take("(")
            if (p := self.peek()) is not None and p[1] == ")":
                self.fail(f"{name.upper()} has no children")
            children = [self.node(f"{path}/0", depth + 1)]
            while (p := self.peek()) is not None and p[1] == ",":
                self.take(",")
                children.append(self.node(f"{path}/{len(children)}", depth + 1))
            self.take(")")
            return TaskNode(id=path, kind=_GOALS[name.lower()], children=tuple(children))
        if nxt is None or nxt[1] != "(":
            return _leaf(path, DEFAULT_BEHAVIOR, {"object": name}, None)
        self.take("(")
        params: dict[str, ParamValue] = {}
        positional = 0
        while (p := self.peek()) is not None and p[1] != ")":
            if params or positional:
                self.take(",")
            after = self.toks[self.i + 1] if self.i + 1 < len(self.toks) else None
            if after is not None and after[1] == "=":
                key = self.take(kind="ident")
                self.take("=")
                if key[1] in params:
                    self.fail(f"parameter {key[1]!r} given twice", key[2])
                params[key[1]] = self.value()
            else:
                if positional or params:
                    self.fail("only the first argument may be positional (it is the object)")
                params["object"] = self.value()
                positional = 1
        self.take(")")
        return _leaf(path, name, params, None)

    def value(self) -> ParamValue:
        kind, text, pos = self.take()
        if kind == "str":
            return bytes(text[1:-1], "utf-8").decode("unicode_escape")
        if kind == "num":
            number = float(text) if any(c in text for c in ".eE") else int(text)
            if not math.isfinite(number):
                self.fail(f"{text} is beyond a finite number", pos)
            return number
        if kind == "ident":
            return {"true": True, "false": False}.get(text, text)
        self.fail(f"expected a value, found {text!r}", pos)
        raise AssertionError  # unreachable


def parse_tree(text: str) -> TaskTree:
    """Parse the compact form, e.g. ``THEN(cup, OR(orange, apple))``.

    Goals are THEN/AND/OR (any case) with one or more children; a leaf is a bare name
    (``PLACE(object=name)``) or ``BEHAVIOR(arg, key=value, ...)`` whose one positional
    argument is the object. Ids are paths (``root/1/0``). Raises SpecificationError
    naming the character position, or the limit a tree beyond ``limits`` breaks.
    """
    tree = _parse_text(text)
    check_tree_limits(tree, "task tree")
    return tree


def _parse_text(text: str, above: int = 0, count: list[int] | None = None) -> TaskTree:
    """``parse_tree`` but the wire-size check; for a string inside a dict-form tree
    (checked with the whole tree) `above` levels down, `count` nodes read before it
    (updated)."""
    if not isinstance(text, str):
        raise SpecificationError(f"task tree must be a string, not {type(text).__name__}")
    parser = _Parser(text)
    if not parser.toks:
        raise SpecificationError("task tree is empty")
    parser.nodes = 0 if count is None else count[0]
    root = parser.node(_ROOT, above + 1)
    if parser.peek() is not None:
        parser.fail(f"unexpected {parser.peek()[1]!r} after the end of the tree")  # type: ignore[index]
    if count is not None:
        count[0] = parser.nodes
    return TaskTree(root)


# ---------------------------------------------------------------- dict form

_GOAL_KEYS = {"type", "children", "id", "name"}
_LEAF_KEYS = {"behavior", "params", "object", "id", "name"}


def tree_from_dict(data: Mapping[str, Any] | str, *, where: str = "tree") -> TaskTree:
    """Build a tree from plain data as a TOML config gives it.

    Accepted forms, nestable: a string (compact form, e.g. ``"cup"`` or ``"OR(a, b)"``);
    ``{type = "then", children = [...], id?, name?}``; the shorthand
    ``{then = [...]}``; a leaf ``{behavior = "PLACE", params = {...}, object?, id?,
    name?}``. Ids default to paths. Raises SpecificationError naming the key path
    (``tree.children[1].children[0]``), or the limit a tree beyond ``limits`` breaks
    (its nesting is measured before anything recurses into it).
    """
    tree = TaskTree(_from_data(data, _ROOT, where, 1, [0]))
    check_tree_limits(tree, where)
    return tree


def _from_data(data: Any, path: str, where: str, depth: int, count: list[int]) -> TaskNode:
    """The node `data` gives at `depth` (1: the root), `count` the nodes read so far:
    both are checked before it recurses into `data`'s children."""
    if isinstance(data, str):
        try:
            sub = _parse_text(data, depth - 1, count)
        except SpecificationError as exc:
            raise SpecificationError(f"{where}: {exc}") from None
        return _reroot(sub.root, path)
    count[0] += 1
    check_tree_shape(depth, count[0], where)
    if not isinstance(data, Mapping):
        raise SpecificationError(
            f"{where}: expected a table or a string, found {type(data).__name__}"
        )
    keys = set(data)
    shorthand = keys & set(_GOALS)
    if shorthand:
        if len(keys) != 1:
            raise SpecificationError(
                f"{where}: the shorthand {{{sorted(shorthand)[0]} = [...]}} takes no other keys;"
                f" use type/children/id to add an id"
            )
        goal = shorthand.pop()
        data = {"type": goal, "children": data[goal]}
        keys = set(data)
    node_id = data.get("id", path)
    if not isinstance(node_id, str):
        raise SpecificationError(f"{where}.id: must be a string")
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise SpecificationError(f"{where}.name: must be a string")
    if "type" in data:
        unknown = keys - _GOAL_KEYS
        if unknown:
            raise SpecificationError(f"{where}: unknown key(s) {sorted(unknown)} for a goal node")
        kind_name = data["type"]
        if not isinstance(kind_name, str) or kind_name.lower() not in _GOALS:
            raise SpecificationError(
                f"{where}.type: {kind_name!r} is not one of 'then', 'and', 'or'"
            )
        children = data.get("children")
        if not isinstance(children, list | tuple) or not children:
            raise SpecificationError(f"{where}.children: a goal needs a non-empty list")
        kids = tuple(
            _from_data(c, f"{node_id}/{i}", f"{where}.children[{i}]", depth + 1, count)
            for i, c in enumerate(children)
        )
        return TaskNode(id=node_id, kind=_GOALS[kind_name.lower()], children=kids, name=name)
    if "behavior" in data or "object" in data:
        unknown = keys - _LEAF_KEYS
        if unknown:
            raise SpecificationError(f"{where}: unknown key(s) {sorted(unknown)} for a behaviour")
        behavior = data.get("behavior", DEFAULT_BEHAVIOR)
        if not isinstance(behavior, str) or not behavior:
            raise SpecificationError(f"{where}.behavior: must be a non-empty string")
        params = dict(data.get("params", {}))
        for k, v in params.items():
            if not isinstance(k, str) or not isinstance(v, str | int | float | bool):
                raise SpecificationError(
                    f"{where}.params.{k}: values must be strings, numbers or booleans"
                )
            if isinstance(v, float) and not math.isfinite(v):
                raise SpecificationError(f"{where}.params.{k}: is {v}; give a finite number")
        if "object" in data:
            if "object" in params:
                raise SpecificationError(f"{where}: 'object' given both directly and in params")
            params["object"] = data["object"]
        return _leaf(node_id, behavior, params, name)
    raise SpecificationError(
        f"{where}: a node needs 'type' (then/and/or) and 'children', or 'behavior'/'object'"
    )


def _reroot(node: TaskNode, path: str) -> TaskNode:
    """Rename a parsed subtree's path ids to hang under ``path``."""
    kids = tuple(_reroot(c, f"{path}/{i}") for i, c in enumerate(node.children))
    return TaskNode(
        id=path,
        kind=node.kind,
        children=kids,
        behavior=node.behavior,
        params=node.params,
        name=node.name,
    )
