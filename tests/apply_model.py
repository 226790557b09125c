"""What ``kubectl apply`` and the API server do to an object that exists: the models the upgrade tests run.

* **Client-side apply** (kubectl's default): kubectl keeps the applied file in the annotation
  ``kubectl.kubernetes.io/last-applied-configuration`` and sends a strategic merge patch made as
  apimachinery's ``CreateThreeWayMergePatch`` makes it: the changes from the live object to the
  new file (deletions ignored) merged with the deletions from the last applied file to the new
  one (changes ignored). So a field the last applied file had and the new one lacks is deleted
  (``null``, or ``$patch: delete`` for an element of a list merged by key), whoever wrote it
  since; a field no applied file had is kept.
* **Strategic merge patch** as the API server applies it: maps merged, ``null`` deletes, lists
  with a merge key (``webhooks`` by ``name`` and the others in :data:`MERGE_KEYS`, as the Go
  types' ``patchMergeKey`` tags say) merged element by element and put in
  ``$setElementOrder`` order, every other list replaced whole.
* **JSON merge patch** (RFC 7386): what kubectl sends for custom resources (cert-manager's).
* **Server-side apply**: each manager owns the fields of what it last applied (list elements
  merged by key are told apart by it, other lists are owned whole); an apply deletes the fields
  its manager owned and no longer applies unless another manager owns them too, and an element
  whose key it no longer applies goes whole (what other managers wrote into it with it); an
  update (a controller's write, such as cert-manager's CA injector) owns the fields it changed.

Outside these models: ``$retainKeys`` (only a change of a Deployment's strategy type would send it),
lists of scalars merged by value, and the real server's placing of elements that only the live
list has among the ordered ones (they go after them here). A directive the model does not know
raises. tests/webhook/test_webhook_upgrade.py checks the model's patches against real kubectl's, where
kubectl is installed.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
FieldPath = tuple[str, ...]   # field names from the object's root, list indices left out
# patchMergeKey of the list fields of the objects webhook/deploy applies (k8s.io/api's Go types), by
# kind and path without list indices; for server-side apply the same lists are listType=map by that key.
MERGE_KEYS: dict[tuple[str, FieldPath], str] = {
    ("ValidatingWebhookConfiguration", ("webhooks",)): "name",
    ("ValidatingWebhookConfiguration", ("webhooks", "matchConditions")): "name",
    ("Deployment", ("spec", "template", "spec", "containers")): "name",
    ("Deployment", ("spec", "template", "spec", "containers", "ports")): "containerPort",
    ("Deployment", ("spec", "template", "spec", "containers", "volumeMounts")): "mountPath",
    ("Deployment", ("spec", "template", "spec", "containers", "env")): "name",
    ("Deployment", ("spec", "template", "spec", "volumes")): "name",
    ("Service", ("spec", "ports")): "port",
}


def merge_key(kind: str, path: FieldPath) -> str | None:
    """The key a list is merged by, None for a list that is replaced whole (atomic)."""
    return MERGE_KEYS.get((kind, path))


# --- client-side apply -------------------------------------------------------------------------------


def last_applied(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The file last applied to ``obj``, from its annotation."""
    text = obj.get("metadata", {}).get("annotations", {}).get(LAST_APPLIED)
    return json.loads(text) if text else None


def with_last_applied(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` as kubectl sends it: the annotation holds the file itself (Go's JSON: keys sorted,
    ``<``, ``>`` and ``&`` escaped, a newline at the end)."""
    recorded = copy.deepcopy(config)
    recorded.setdefault("metadata", {}).setdefault("annotations", {}).pop(LAST_APPLIED, None)
    text = json.dumps(recorded, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n"
    sent = copy.deepcopy(recorded)
    sent["metadata"]["annotations"][LAST_APPLIED] = text
    return sent


def three_way_patch(original: dict[str, Any] | None, modified: dict[str, Any], current: dict[str, Any],
                    kind: str) -> dict[str, Any]:
    """The strategic merge patch kubectl sends: ``original`` the last applied file (None: none),
    ``modified`` the new one with its annotation, ``current`` the live object."""
    delta = _diff_maps(current, modified, kind, (), ignore_deletions=True, ignore_changes=False)
    deletions = _diff_maps(original or {}, modified, kind, (), ignore_deletions=False, ignore_changes=True)
    return _merge_patches(deletions, delta, kind, ())


def client_side_apply(live: dict[str, Any] | None, config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``kubectl apply`` of ``config`` to ``live`` (None: absent): the object after, and the patch sent
    (the whole object when it was created)."""
    modified = with_last_applied(config)
    if live is None:
        return modified, modified
    patch = three_way_patch(last_applied(live), modified, live, config["kind"])
    return strategic_merge(live, patch, config["kind"]), patch


def _diff_maps(original: dict[str, Any], modified: dict[str, Any], kind: str, path: FieldPath, *,
               ignore_deletions: bool, ignore_changes: bool) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    for key, new in modified.items():
        if key not in original:
            if not ignore_changes:
                patch[key] = copy.deepcopy(new)
            continue
        old = original[key]
        if type(old) is not type(new):
            if not ignore_changes:
                patch[key] = copy.deepcopy(new)
        elif isinstance(new, dict):
            sub = _diff_maps(old, new, kind, (*path, key), ignore_deletions=ignore_deletions,
                             ignore_changes=ignore_changes)
            if sub:
                patch[key] = sub
        elif isinstance(new, list) and merge_key(kind, (*path, key)):
            _diff_keyed_lists(patch, key, old, new, kind, (*path, key), ignore_deletions=ignore_deletions,
                              ignore_changes=ignore_changes)
        elif old != new and not ignore_changes:
            patch[key] = copy.deepcopy(new)
    if not ignore_deletions:
        for key in original:
            if key not in modified:
                patch[key] = None
    return patch


def _diff_keyed_lists(patch: dict[str, Any], key: str, old: list[dict[str, Any]], new: list[dict[str, Any]],
                      kind: str, path: FieldPath, *, ignore_deletions: bool, ignore_changes: bool) -> None:
    mkey = merge_key(kind, path)
    assert mkey is not None
    before = {item[mkey]: item for item in old}
    after = {item[mkey] for item in new}
    items: list[dict[str, Any]] = []
    for item in new:
        if item[mkey] in before:
            sub = _diff_maps(before[item[mkey]], item, kind, path, ignore_deletions=ignore_deletions,
                             ignore_changes=ignore_changes)
            if sub:
                items.append({**sub, mkey: item[mkey]})
        elif not ignore_changes:
            items.append(copy.deepcopy(item))
    if not ignore_deletions:
        items.extend({mkey: item[mkey], "$patch": "delete"} for item in old if item[mkey] not in after)
    same_order = [i[mkey] for i in old if i[mkey] in after] == [i[mkey] for i in new if i[mkey] in before]
    if items:
        patch[key] = items
    # As diffLists: the order is sent with any change, and with a change of order alone in the delta.
    if items or (not ignore_changes and not same_order):
        patch[f"$setElementOrder/{key}"] = [{mkey: item[mkey]} for item in new]


def _merge_patches(first: dict[str, Any], second: dict[str, Any], kind: str, path: FieldPath) -> dict[str, Any]:
    """One patch doing what ``first`` then ``second`` do (``second`` never deletes: it is the delta)."""
    out = copy.deepcopy(first)
    for key, value in second.items():
        mkey = merge_key(kind, (*path, key))
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge_patches(out[key], value, kind, (*path, key))
        elif mkey and isinstance(value, list) and isinstance(out.get(key), list):
            out[key] = _merge_keyed_lists(out[key], value, mkey, kind, (*path, key))
        else:
            out[key] = copy.deepcopy(value)
    return out


def _merge_keyed_lists(first: list[dict[str, Any]], second: list[dict[str, Any]], mkey: str, kind: str,
                       path: FieldPath) -> list[dict[str, Any]]:
    """apimachinery's ``mergeSlice`` of two patches' lists: ``second``'s elements (each merged with
    ``first``'s of its key) in their order and ``first``'s others in theirs, interleaved as its
    ``mergeSortedSlice`` does: one of ``first``'s goes ahead only of an element that ``first`` has
    too, and placed after it. (kubectl sends a deletion after the changes it comes with.)"""
    before = {item[mkey]: item for item in first}
    changed = [_merge_patches(before[item[mkey]], item, kind, path) if item[mkey] in before else copy.deepcopy(item)
               for item in second]
    keys = {item[mkey] for item in second}
    only_first = [copy.deepcopy(item) for item in first if item[mkey] not in keys]
    rank = {item[mkey]: i for i, item in enumerate(first)}
    merged: list[dict[str, Any]] = []
    while only_first or changed:
        ahead = only_first and (not changed or (changed[0][mkey] in rank
                                                and rank[only_first[0][mkey]] < rank[changed[0][mkey]]))
        merged.append((only_first if ahead else changed).pop(0))
    return merged


# --- what the API server does with a patch ---------------------------------------------------------------


def strategic_merge(live: dict[str, Any], patch: dict[str, Any], kind: str) -> dict[str, Any]:
    """``live`` after the strategic merge patch ``patch``."""
    return _smp_map(live, patch, kind, ())


def _smp_map(live: dict[str, Any], patch: dict[str, Any], kind: str, path: FieldPath) -> dict[str, Any]:
    out = copy.deepcopy(live)
    orders: dict[str, list[dict[str, Any]]] = {}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/"):
            orders[key.split("/", 1)[1]] = value
        elif key.startswith("$"):
            raise NotImplementedError(f"strategic merge directive {key} at {path}")
        elif value is None:
            out.pop(key, None)
        elif isinstance(value, list) and merge_key(kind, (*path, key)):
            out[key] = _smp_list(out.get(key, []), value, kind, (*path, key))
        elif isinstance(value, dict):
            base = out.get(key)
            out[key] = _smp_map(base if isinstance(base, dict) else {}, value, kind, (*path, key))
        else:
            out[key] = copy.deepcopy(value)
    for key, order in orders.items():
        mkey = merge_key(kind, (*path, key))
        if mkey is None or key not in out:
            raise NotImplementedError(f"$setElementOrder/{key} at {path}")
        rank = {item[mkey]: i for i, item in enumerate(order)}
        ordered = sorted((i for i in out[key] if i[mkey] in rank), key=lambda i: rank[i[mkey]])
        out[key] = ordered + [i for i in out[key] if i[mkey] not in rank]
    return out


def _smp_list(live: list[dict[str, Any]], patch: list[dict[str, Any]], kind: str,
              path: FieldPath) -> list[dict[str, Any]]:
    mkey = merge_key(kind, path)
    out = copy.deepcopy(live)
    for item in patch:
        at = next((i for i, old in enumerate(out) if old[mkey] == item[mkey]), None)
        directive = item.get("$patch")
        if directive == "delete":
            if at is not None:
                del out[at]
        elif directive is not None:
            raise NotImplementedError(f"$patch: {directive} at {path}")
        elif at is None:
            out.append(_smp_map({}, item, kind, path))
        else:
            out[at] = _smp_map(out[at], item, kind, path)
    return out


def json_merge(live: Any, patch: Any) -> Any:
    """RFC 7386: ``live`` after the JSON merge patch ``patch``."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(live) if isinstance(live, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = json_merge(out.get(key), value)
    return out


# --- server-side apply -----------------------------------------------------------------------------------

Field = tuple[Any, ...]   # names, and (key, value) pairs for an element of a list merged by key


def leaves(obj: dict[str, Any], kind: str, path: FieldPath = (), at: Field = ()) -> dict[Field, Any]:
    """Every owned field of ``obj`` with its value: scalars, whole atomic lists, empty maps."""
    out: dict[Field, Any] = {}
    for key, value in obj.items():
        mkey = merge_key(kind, (*path, key))
        if isinstance(value, dict) and value:
            out.update(leaves(value, kind, (*path, key), (*at, key)))
        elif isinstance(value, list) and mkey:
            for item in value:
                out.update(leaves(item, kind, (*path, key), (*at, key, (mkey, item[mkey]))))
        else:
            out[(*at, key)] = value
    return out


@dataclass
class ServerSideObject:
    """One object on a server that records, per manager, the fields it owns (its managedFields)."""

    kind: str
    live: dict[str, Any] = field(default_factory=dict)
    owners: dict[str, set[Field]] = field(default_factory=dict)

    def apply(self, manager: str, config: dict[str, Any]) -> None:
        """``kubectl apply --server-side`` as ``manager``; ValueError on a conflict (no --force-conflicts)."""
        applied = leaves(config, self.kind)
        current = leaves(self.live, self.kind)
        for other, fields in self.owners.items():
            clash = [f for f in fields & applied.keys() if other != manager and current.get(f) != applied[f]]
            if clash:
                raise ValueError(f"conflict with {other!r}: {clash}")
        dropped = self.owners.get(manager, set()) - applied.keys()
        kept_by_others = set().union(*(f for m, f in self.owners.items() if m != manager))
        # An element's merge key goes last: the element is found by it until its other fields are gone.
        for f in sorted(dropped - kept_by_others, key=_is_merge_key):
            _remove(self.live, f)
        for f, value in applied.items():
            _set(self.live, f, value)
        self.owners[manager] = set(applied)
        present = leaves(self.live, self.kind).keys()
        for fields in self.owners.values():
            fields &= present   # what went with a removed element is nobody's any more

    def update(self, manager: str, new: dict[str, Any]) -> None:
        """A controller's write (PUT or PATCH) of the whole object: it owns what it changed."""
        before, after = leaves(self.live, self.kind), leaves(new, self.kind)
        changed = {f for f in before.keys() | after.keys() if before.get(f) != after.get(f)}
        for fields in self.owners.values():
            fields -= changed
        self.owners.setdefault(manager, set()).update(changed & after.keys())
        self.live = copy.deepcopy(new)


def _is_merge_key(f: Field) -> bool:
    return len(f) >= 2 and isinstance(f[-2], tuple) and f[-2][0] == f[-1]


def _set(obj: dict[str, Any], f: Field, value: Any) -> None:
    node: Any = obj
    for part, following in zip(f[:-1], f[1:]):
        if isinstance(part, tuple):
            mkey, key = part
            found = next((i for i in node if i.get(mkey) == key), None)
            if found is None:
                found = {mkey: key}
                node.append(found)
            node = found
        else:
            node = node.setdefault(part, [] if isinstance(following, tuple) else {})
    node[f[-1]] = copy.deepcopy(value)


def _remove(obj: dict[str, Any], f: Field) -> None:
    """Delete the field ``f`` (an element's merge key: the whole element), then every map and list
    element it leaves empty (an element holding only its key is gone too)."""
    chain: list[Any] = [obj]
    for part in f[:-1]:
        node = chain[-1]
        if isinstance(part, tuple):
            node = next((i for i in node if i.get(part[0]) == part[1]), None)
        else:
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            return
        chain.append(node)
    if _is_merge_key(f):
        # Whose key nobody applies any more, the element goes, with what other managers wrote into it
        # (structured-merge-diff removes the item itself, its "." entry).
        chain[-2].remove(chain[-1])
        chain.pop()
        f = f[:-1]
    else:
        chain[-1].pop(f[-1], None)
    for depth in range(len(chain) - 1, 0, -1):
        node, part, parent = chain[depth], f[depth - 1], chain[depth - 1]
        if isinstance(part, tuple):
            if set(node) <= {part[0]}:
                parent.remove(node)
        elif not node:
            del parent[part]
