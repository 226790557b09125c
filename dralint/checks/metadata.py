"""Object metadata of every resource.k8s.io kind, in every served version.

The API server runs apimachinery's ObjectMeta validation before anything DRA-specific: the name
(or ``generateName``) must be a DNS subdomain for every DRA kind, a namespaced object's namespace
a DNS label, label keys qualified names and values label values, annotation keys qualified
names with at most 256 KiB of annotations in total, finalizers qualified (or one of the standard
names), owner references complete. A ResourceClaimTemplate's ``spec.metadata`` may only carry
labels and annotations (core ``ValidateTemplateObjectMeta``).

Two things the server does *not* reject: a namespaced object without a namespace (kubectl fills
it in from the context), and a namespace on a cluster-scoped object (the server clears it) —
the latter is worth a warning because the author probably meant something else.

Rules: DRA120 object-name-required, DRA121 object-name-invalid, DRA122 namespace-invalid,
DRA123 namespace-ignored, DRA124 label-invalid, DRA125 annotation-invalid,
DRA126 annotations-too-large, DRA127 finalizer-invalid, DRA128 owner-reference-invalid,
DRA129 template-metadata-field-forbidden, DRA130 metadata-immutable.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from ..manifest import NAMESPACED_DRA_KINDS
from ..paths import FieldPath
from .base import CheckContext, p
from ..problems import Problem
from ..kube.validation import (is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
                               mask_trailing_dash)

KINDS: frozenset[str] = frozenset({
    "ResourceClaim", "ResourceClaimTemplate", "DeviceClass", "ResourceSlice", "DeviceTaintRule",
    "ResourcePoolStatusRequest", "ResourceClass", "PodSchedulingContext", "PodScheduling",
    "ResourceClaimParameters", "ResourceClassParameters",
})

NAME_REQUIRED = "DRA120"
NAME_INVALID = "DRA121"
NAMESPACE_INVALID = "DRA122"
NAMESPACE_IGNORED = "DRA123"
LABEL_INVALID = "DRA124"
ANNOTATION_INVALID = "DRA125"
ANNOTATIONS_TOO_LARGE = "DRA126"
FINALIZER_INVALID = "DRA127"
OWNER_REFERENCE_INVALID = "DRA128"
TEMPLATE_FIELD_FORBIDDEN = "DRA129"
IMMUTABLE = "DRA130"

RULES = ("DRA120", "DRA121", "DRA122", "DRA123", "DRA124", "DRA125", "DRA126", "DRA127", "DRA128", "DRA129", "DRA130")

# apimachinery TotalAnnotationSizeLimitB: keys plus values, in bytes.
ANNOTATIONS_MAX_BYTES = 256 * 1024
# Kinds validated with ValidateObjectMetaWithOpts: generateName is not checked itself, the
# generated name is (so a bad generateName shows up at metadata.name).
_GENERATED_NAME_ONLY = frozenset({"DeviceClass"})
# Finalizer names without a domain that core accepts.
_STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
_TEMPLATE_ALLOWED = frozenset({"labels", "annotations"})


def check(ctx: CheckContext) -> Iterable[Problem]:
    """ObjectMeta problems of one DRA object (and of a claim template's ``spec.metadata``)."""
    if not ctx.obj.manifest.is_dra:
        return
    meta = ctx.obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    kind = ctx.obj.kind
    if ctx.is_update and ctx.old is not None:
        # Name and namespace cannot change, so they were checked when the object was stored.
        old_meta = ctx.old.get("metadata")
        yield from _immutable(meta, old_meta if isinstance(old_meta, dict) else {}, kind)
    else:
        yield from _name(meta, kind)
        yield from _namespace(meta, kind)
    if meta.get("labels") is not None:
        yield from labels_problems(meta["labels"], p("metadata", "labels"))
    if meta.get("annotations") is not None:
        yield from annotations_problems(meta["annotations"], p("metadata", "annotations"))
    if meta.get("finalizers") is not None:
        yield from _finalizers(meta["finalizers"], p("metadata", "finalizers"))
    if meta.get("ownerReferences") is not None:
        yield from _owner_references(meta["ownerReferences"], p("metadata", "ownerReferences"))
    if kind == "ResourceClaimTemplate":
        template = ctx.obj.get("spec", "metadata")
        if isinstance(template, dict):
            yield from _template_meta(template, p("spec", "metadata"))


def _name(meta: dict, kind: str) -> Iterator[Problem]:
    name, generate = meta.get("name"), meta.get("generateName")
    name = name if isinstance(name, str) else ""
    generate = generate if isinstance(generate, str) else ""
    if not name and not generate:
        yield Problem(NAME_REQUIRED, p("metadata", "name"),
                      f"a {kind} needs `metadata.name` (or `metadata.generateName` for a server-generated name) "
                      "(API server: Required value, \"name or generateName is required\")")
        return
    if name:
        for msg in is_dns1123_subdomain(name):
            yield Problem(NAME_INVALID, p("metadata", "name"),
                          f"name {name!r} is not a valid {kind} name: {msg}; use lower-case letters, digits, '-' "
                          "and '.' (at most 253 characters) (API server: Invalid value)")
    if generate and (not name or kind not in _GENERATED_NAME_ONLY):
        # The server appends 5 random characters; a trailing '-' is fine there.
        path = p("metadata", "name") if kind in _GENERATED_NAME_ONLY else p("metadata", "generateName")
        for msg in is_dns1123_subdomain(mask_trailing_dash(generate)):
            yield Problem(NAME_INVALID, path,
                          f"generateName {generate!r} cannot start a valid {kind} name: {msg}; use lower-case "
                          "letters, digits, '-' and '.' (API server: Invalid value)")


def _immutable(meta: dict, old: dict, kind: str) -> Iterator[Problem]:
    fields = ["name", "uid"] + (["namespace"] if kind in NAMESPACED_DRA_KINDS else [])
    for name in fields:
        new, before = meta.get(name) or "", old.get(name) or ""
        # An update without uid keeps the stored one; only a different uid is an error.
        if new != before and not (name == "uid" and not new):
            yield Problem(IMMUTABLE, p("metadata", name),
                          f"metadata.{name} cannot change ({before!r} → {new!r}): this would be a different object; "
                          f"create the new {kind} and delete the old one instead (API server: Invalid value, "
                          "\"field is immutable\")")


def _namespace(meta: dict, kind: str) -> Iterator[Problem]:
    namespace = meta.get("namespace")
    if not isinstance(namespace, str) or not namespace:
        return  # kubectl fills in the namespace of the current context
    if kind not in NAMESPACED_DRA_KINDS:
        yield Problem(NAMESPACE_IGNORED, p("metadata", "namespace"),
                      f"a {kind} is cluster-scoped; the API server ignores `namespace: {namespace}` and stores the "
                      "object for the whole cluster: remove the namespace")
        return
    for msg in is_dns1123_label(namespace):
        yield Problem(NAMESPACE_INVALID, p("metadata", "namespace"),
                      f"namespace {namespace!r} is not a valid namespace name: {msg} (API server: Invalid value)")


def labels_problems(labels: Any, path: FieldPath) -> Iterator[Problem]:
    """Label keys must be qualified names and values label values; reported at the map path."""
    if not isinstance(labels, dict):
        return
    for key, value in labels.items():
        key = str(key)
        for msg in is_qualified_name(key):
            yield Problem(LABEL_INVALID, path,
                          f"label key {key!r} is not valid: {msg}; keys are `[prefix/]name` with an optional DNS "
                          "subdomain prefix and a name of at most 63 characters (API server: Invalid value)")
        if isinstance(value, str):
            for msg in is_valid_label_value(value):
                yield Problem(LABEL_INVALID, path,
                              f"label {key!r} has value {value!r}, which is not a valid label value: {msg}; "
                              "put free text into an annotation instead (API server: Invalid value)")


def annotations_problems(annotations: Any, path: FieldPath) -> Iterator[Problem]:
    """Annotation keys must be qualified names (case-insensitively); all of them at most 256 KiB."""
    if not isinstance(annotations, dict):
        return
    total = 0
    for key, value in annotations.items():
        key = str(key)
        total += len(key.encode()) + (len(value.encode()) if isinstance(value, str) else 0)
        for msg in is_qualified_name(key.lower()):
            yield Problem(ANNOTATION_INVALID, path,
                          f"annotation key {key!r} is not valid: {msg}; keys are `[prefix/]name` like label keys "
                          "(API server: Invalid value)")
    if total > ANNOTATIONS_MAX_BYTES:
        yield Problem(ANNOTATIONS_TOO_LARGE, path,
                      f"annotations take {total} bytes (keys plus values); at most {ANNOTATIONS_MAX_BYTES} bytes "
                      "(256 KiB) are allowed: keep large data in a ConfigMap (API server: Too long)",
                      details={"size": total, "limit": ANNOTATIONS_MAX_BYTES})


def _finalizers(finalizers: Any, path: FieldPath) -> Iterator[Problem]:
    if not isinstance(finalizers, list):
        return
    names = [f for f in finalizers if isinstance(f, str)]
    for i, name in enumerate(finalizers):
        if not isinstance(name, str):
            continue
        for msg in is_qualified_name(name):
            yield Problem(FINALIZER_INVALID, path,
                          f"finalizer {name!r} is not a qualified name: {msg} (API server: Invalid value)")
        if "/" not in name and name not in _STANDARD_FINALIZERS:
            yield Problem(FINALIZER_INVALID, path.child(i),
                          f"finalizer {name!r} is neither a standard finalizer name ({', '.join(sorted(_STANDARD_FINALIZERS))}) "
                          "nor fully qualified; use `<your domain>/<name>`, e.g. example.com/cleanup (API server: "
                          "Invalid value)")
    if "orphan" in names and "foregroundDeletion" in names:
        yield Problem(FINALIZER_INVALID, path,
                      "finalizers `orphan` and `foregroundDeletion` cannot both be set; keep the one for the "
                      "deletion policy you want (API server: Invalid value)")


def _owner_references(refs: Any, path: FieldPath) -> Iterator[Problem]:
    if not isinstance(refs, list):
        return
    controllers: list[str] = []
    for i, ref in enumerate(refs):
        if not isinstance(ref, dict):
            continue
        ref_path = path.child(i)
        api_version = ref.get("apiVersion")
        api_version = api_version if isinstance(api_version, str) else ""
        if not api_version.rpartition("/")[2]:
            yield Problem(OWNER_REFERENCE_INVALID, ref_path.child("apiVersion"),
                          "an owner reference needs the owner's apiVersion with a version (e.g. apps/v1) "
                          "(API server: Invalid value, \"version must not be empty\")")
        for name in ("kind", "name", "uid"):
            if not ref.get(name):
                yield Problem(OWNER_REFERENCE_INVALID, ref_path.child(name),
                              f"an owner reference needs `{name}` (API server: Invalid value, \"must not be empty\")")
        if api_version == "v1" and ref.get("kind") == "Event":
            yield Problem(OWNER_REFERENCE_INVALID, ref_path,
                          "an Event cannot own other objects (API server: Invalid value)")
        if ref.get("controller") is True:
            controllers.append(f"{ref.get('kind')}/{ref.get('name')}")
    if len(controllers) > 1:
        yield Problem(OWNER_REFERENCE_INVALID, path,
                      f"only one owner reference can have `controller: true`; found it on {', '.join(controllers)} "
                      "(API server: Invalid value)")


def _template_meta(template: dict, path: FieldPath) -> Iterator[Problem]:
    yield from labels_problems(template.get("labels"), path.child("labels"))
    yield from annotations_problems(template.get("annotations"), path.child("annotations"))
    for name, value in template.items():
        if name not in _TEMPLATE_ALLOWED and value not in (None, "", 0, [], {}):
            yield Problem(TEMPLATE_FIELD_FORBIDDEN, path.child(str(name)),
                          f"`{name}` cannot be set in the metadata of a claim template: the claim's name and "
                          "namespace come from the Pod; only `labels` and `annotations` are copied to the "
                          "generated claim (API server: Forbidden, \"cannot be set\")")
