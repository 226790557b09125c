"""A claim's shape is the key equal questions share: values that read differently stay apart."""
from __future__ import annotations

from dralint.feasibility import model


def _devices(capacity: object) -> dict:
    return {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "capacity": capacity}}]}


def test_nan_and_null_stay_apart_and_read_as_written() -> None:
    # orjson writes NaN as null: the shape of a claim with either must not be the other's.
    nan, null = model._claim_shape(_devices(float("nan"))), model._claim_shape(_devices(None))
    assert nan != null
    path = model.FieldPath(("spec",))
    read_nan = model._read_alike(nan, path)[0][0].exactly
    read_null = model._read_alike(null, path)[0][0].exactly
    assert read_nan is not None and read_nan.has_capacity
    assert read_null is not None and not read_null.has_capacity


def test_values_orjson_refuses_still_have_a_shape() -> None:
    big = _devices({"requests": {"memory": 2**70}})
    assert model._claim_shape(big) == model._claim_shape(_devices({"requests": {"memory": 2**70}}))
    assert model._claim_shape(big) != model._claim_shape(_devices({"requests": {"memory": 2**70 + 1}}))
    assert model._claim_shape({1: "x"}) != model._claim_shape({"requests": []})


def test_equal_devices_have_equal_shapes_whatever_the_key_order() -> None:
    one = {"requests": [{"name": "a", "exactly": {"count": 1, "deviceClassName": "c"}}], "constraints": []}
    other = {"constraints": [], "requests": [{"exactly": {"deviceClassName": "c", "count": 1}, "name": "a"}]}
    assert model._claim_shape(one) == model._claim_shape(other)
    assert model._claim_shape(one) != model._claim_shape({**one, "constraints": [{"requests": ["a"]}]})
    # 1 and 1.0 and true are different counts to the API server.
    counts = [{"requests": [{"name": "a", "exactly": {"count": v}}]} for v in (1, 1.0, True)]
    assert len({model._claim_shape(c) for c in counts}) == 3
