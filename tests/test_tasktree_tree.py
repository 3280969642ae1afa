"""Task tree model: parser round trips, dict form, malformed input, renderer, exports."""

from __future__ import annotations

import pkgutil

import pytest

import teamtree.planners.tasktree as tt
from teamtree.broker import SpecificationError
from teamtree.planners.tasktree import (
    NodeKind,
    NodeStatus,
    TaskController,
    parse_tree,
    render_unicode,
    tree_from_dict,
    walk,
)

FIG2 = "AND(THEN(cup, AND(sugar, tea_pot)), THEN(sandwich, OR(orange, apple), burger))"


def test_all_is_sorted_and_exact() -> None:
    # ruff's RUF022 order: CONSTANTS, then Classes, then functions
    assert tt.__all__ == sorted(
        tt.__all__, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n)
    )
    public = {n for n in dir(tt) if not n.startswith("_")}
    submodules = {m.name for m in pkgutil.iter_modules(tt.__path__)}
    assert set(tt.__all__) == public - submodules


def test_parse_fig2_ids_and_leaves() -> None:
    t = parse_tree(FIG2)
    assert t.root.kind is NodeKind.AND
    assert [t[leaf].param_dict["object"] for leaf in t.leaves] == [
        "cup", "sugar", "tea_pot", "sandwich", "orange", "apple", "burger",
    ]  # fmt: skip
    assert t.find("orange") == "root/1/1/0"
    assert t["root/1/1"].kind is NodeKind.OR
    assert t["root/0/0"].behavior == "PLACE"
    assert list(t.ancestors("root/1/1/0")) == ["root/1/1", "root/1", "root"]


@pytest.mark.parametrize(
    "text",
    [
        FIG2,
        "THEN(AND(burger, cup), AND(tea_pot, sugar))",
        "cup",
        "or(a, b)",
        'THEN(PICK(cup, hand=left, speed=0.5), MOVE(x=1, y=-2, fast=true), SAY(text="hi, you"))',
        "AND(THEN(a), OR(AND(b, c), d))",
    ],
)
def test_round_trips(text: str) -> None:
    t = parse_tree(text)
    assert parse_tree(t.to_string()) == t
    assert tree_from_dict(t.to_dict()) == t


def test_params_parsed_with_types() -> None:
    t = parse_tree("PICK(cup, hand=left, speed=0.5, n=3, fast=false)")
    assert t.root.param_dict == {
        "object": "cup", "hand": "left", "speed": 0.5, "n": 3, "fast": False,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty"),
        ("AND(a, b", "expected ')'"),
        ("AND()", "no children"),
        ("THEN", "needs children"),
        ("AND(a,, b)", "position 6"),
        ("AND(a, b))", "after the end"),
        ("AND(a b)", "expected ')'"),
        ("PICK(cup, mug)", "only the first argument"),
        ("PICK(x=1, x=2)", "given twice"),
        ("AND(a, %)", "unexpected character '%'"),
    ],
)
def test_malformed_strings_name_the_position(text: str, fragment: str) -> None:
    with pytest.raises(SpecificationError, match=r"position|empty") as exc:
        parse_tree(text)
    assert fragment in str(exc.value)


def test_dict_forms() -> None:
    data = {
        "type": "and",
        "children": [
            {"then": ["cup", {"and": ["sugar", "tea_pot"]}]},
            {
                "type": "THEN",
                "id": "food",
                "children": [
                    {"object": "sandwich", "id": "sandwich"},
                    "OR(orange, apple)",
                    {"behavior": "PLACE", "params": {"object": "burger"}, "name": "last"},
                ],
            },
        ],
    }
    t = tree_from_dict(data)
    assert t.to_string() == parse_tree(FIG2).to_string()
    assert t["food"].kind is NodeKind.THEN
    assert t.find("sandwich") == "sandwich"
    assert t["food/1/0"].param_dict == {"object": "orange"}
    assert t.find("last") == "food/2"
    assert tree_from_dict(t.to_dict()) == t


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"type": "xor", "children": ["a"]}, "tree.type"),
        ({"type": "and", "children": []}, "tree.children"),
        ({"type": "and", "children": ["a", {"objetc": "b"}]}, "tree.children[1]"),
        ({"type": "and", "children": ["a", {"object": "b", "colour": 1}]}, "colour"),
        ({"then": ["a"], "id": "x"}, "shorthand"),
        ({"type": "and", "children": ["a", "AND(b"]}, "tree.children[1]"),
        ({"type": "and", "children": [{"object": "a", "id": "x"}, {"object": "b", "id": "x"}]},
         "appears twice"),
        ({"object": "a", "id": "bad#id"}, "bad#id"),
        ({"object": "a", "params": {"v": [1]}}, "tree.params.v"),
        (["a"], "expected a table"),
    ],
)  # fmt: skip
def test_malformed_dicts_name_the_key(data: object, fragment: str) -> None:
    with pytest.raises(SpecificationError) as exc:
        tree_from_dict(data)  # type: ignore[arg-type]
    assert fragment in str(exc.value)


def test_walk_and_unicode_render_with_states() -> None:
    t = parse_tree(FIG2)
    steps = list(walk(t))
    assert [s.node.id for s in steps] == [n.id for n in t]
    assert steps[0].depth == 0 and steps[-1].last == (True, True)
    ctl = TaskController(t, "pr2", potentials={t.find("sandwich"): 2.0})
    from teamtree.planners.tasktree import Tick

    ctl.handle(Tick(), (1, 0, "pr2"))
    text = render_unicode(t, ctl.statuses(), ctl.activations())
    lines = text.splitlines()
    assert len(lines) == len(t)
    assert lines[0].startswith("▶ AND  [root]  working")
    assert "└── ▶ THEN  [root/1]  working" in lines[6]
    assert "├── ▶ PLACE(sandwich)  [root/1/0]  working" in lines[7]
    assert "│   ├── ○ PLACE(cup)  [root/0/0]  active" in text
    assert "level=1" in lines[0]
    assert render_unicode(t).splitlines()[1] == "├── THEN  [root/0]"


def test_status_wire_names() -> None:
    assert [s.value for s in NodeStatus] == ["inactive", "active", "working", "done", "skipped"]
