// Keyed DOM updates without a framework: keyedList makes a container's children one
// element per item, in order; each element is created once per key and updated in
// place afterwards, so a button under a finger stays the same button across pushes.
"use strict";

// make `parent`'s children exactly one element per item of `items`, in order:
// create(item) builds a new key's element (once), update(el, item) refreshes it
function keyedList(parent, items, keyOf, create, update) {
  const byKey = parent.__keyed || (parent.__keyed = new Map());
  const seen = new Set();
  let cursor = null;
  for (const item of items) {
    const key = String(keyOf(item));
    seen.add(key);
    let el = byKey.get(key);
    if (!el) {
      el = create(item);
      byKey.set(key, el);
    }
    update(el, item);
    const next = cursor ? cursor.nextSibling : parent.firstChild;
    if (next !== el) parent.insertBefore(el, next);
    cursor = el;
  }
  for (const [key, el] of byKey) {
    if (!seen.has(key)) { el.remove(); byKey.delete(key); }
  }
}

// an element: el("button", {className: "start", dataset: {action: "start"}}, "Start")
function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "dataset") Object.assign(node.dataset, v);
    else node[k] = v;
  }
  for (const child of children) node.append(child);
  return node;
}

// set only what changed (a write of the same value still costs a style recalculation)
function setText(node, text) { if (node.textContent !== text) node.textContent = text; }
function setProp(node, name, value) { if (node[name] !== value) node[name] = value; }
