"""Property-based: whatever an API server can send, the webhook answers it with a verdict, and a claim that
breaks the organisation's rules is denied whatever else it carries (deep, odd or hostile values)."""
from __future__ import annotations

import json
import uuid

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dralint import gojson
from dralint_webhook.app import Settings, Webhook, create_app
from dralint_webhook.metrics import Metrics
from dralint_webhook.policy import parse_policy

POLICY = "organization:\n  maxDevicesPerClaim: 2\n"

APP = create_app(Webhook(settings=Settings(), metrics=Metrics(), default_policy=parse_policy(yaml.safe_load(POLICY)),
                         warmed=True)).test_client()

# Values Go's decoder reads into a RawExtension or an annotation: JSON of any shape, strings with lone
# surrogate escapes (written below as raw escapes), large numbers, deep nests.
leaves = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
          | st.text(max_size=20) | st.just("LONE"))
values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                          max_size=3), max_leaves=12)


def nest(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return {"deep": value}


def claim(count: int, parameters: object, annotations: dict) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "ml", "annotations": annotations},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
                                                                          "count": count}}],
                                 "config": [{"opaque": {"driver": "gpu.example.com", "parameters": parameters}}]}}}


def body(obj: dict) -> bytes:
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
              "request": {"uid": str(uuid.uuid4()), "kind": {"group": "resource.k8s.io", "version": "v1",
                                                             "kind": "ResourceClaim"},
                          "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "resourceclaims"},
                          "operation": "CREATE", "namespace": "ml", "name": "c", "object": obj}}
    # Lone surrogate escapes as Go's encoder passes them through from a RawExtension: \ud800 in the text.
    return json.dumps(review).replace('"LONE"', '"x\\ud800y"').encode()


# Hypothesis runs each example under a recursion limit of its own (about 2,000 frames); the webhook's
# process raises it for deep values, so each example does too, and hypothesis says it will not reset it.
@pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(count=st.integers(1, 4), parameters=values | st.integers(0, 3000).map(nest),
       annotations=st.dictionaries(st.sampled_from(["a", "b.example.com/c"]), st.text(max_size=30) | st.just("LONE"),
                                   max_size=2))
def test_every_claim_gets_a_verdict_and_the_organisations_limit_holds(count, parameters, annotations):
    gojson.allow_deep_values()
    data = body(claim(count, parameters, annotations))
    resp = APP.post("/validate", data=data, content_type="application/json")
    assert resp.status_code == 200, resp.get_data(as_text=True)[:300]
    answer = resp.get_json()["response"]
    assert answer["uid"] == json.loads(data)["request"]["uid"]
    assert "Traceback" not in resp.get_data(as_text=True)
    if count > 2:
        assert answer["allowed"] is False and "DRA951" in answer["status"]["message"]


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300) | values.map(lambda v: json.dumps(v).encode()))
def test_any_body_gets_an_answer_never_a_crash(data):
    resp = APP.post("/validate", data=data, content_type="application/json")
    assert resp.status_code in (200, 400), resp.get_data(as_text=True)[:300]
    assert "Traceback" not in resp.get_data(as_text=True)
