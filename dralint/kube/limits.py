"""Numeric limits of the DRA API per release, in one place (kubernetes/api constants)."""
from __future__ import annotations

import functools
from typing import Any
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    requests_per_claim: int = 32
    constraints_per_claim: int = 32
    configs_per_claim: int = 32
    requests_per_reference_list: int = 32
    selectors: int = 32
    subrequests: int = 8
    tolerations_documented: int = 16
    cel_length: int = 10240
    cel_cost: int = 1_000_000
    opaque_parameters_bytes: int = 10240
    reserved_for: int = 256
    allocation_results: int = 32
    allocation_configs: int = 64
    devices_per_slice: int = 128
    devices_per_slice_advanced: int | None = 64
    attributes_and_capacities: int = 32
    attribute_values: int | None = 48
    attribute_value_length: int = 64
    taints_per_device: int = 16
    counter_sets_per_slice: int | None = 8
    counters_per_set: int | None = 32
    consumptions_per_device: int | None = 2
    counters_per_consumption: int | None = 32
    # 1.33-1.34 count counters over the whole slice or device instead of per set or consumption.
    shared_counters_per_slice: int | None = None
    counters_per_device: int | None = None
    device_counters_per_slice: int | None = None
    binding_conditions: int = 4
    valid_values: int = 10
    device_status_conditions: int = 8
    device_status_data_bytes: int = 10240
    interface_name_bytes: int = 256
    hardware_address_bytes: int = 128
    ips: int = 16
    taint_rule_conditions: int = 8
    driver_name_length: int = 63
    pool_name_length: int = 253
    id_length: int = 32
    # Attribute, capacity and constraint names with two or more slashes pass unchecked up to 1.37:
    # the declarative `resourcesQualifiedName` format, authoritative for these keys since 1.36, has no
    # case for them. 1.38 refuses them (kubernetes#141644), except where the stored object already
    # holds them in an unchanged field (a ResourceSlice's `spec.devices`).
    multi_slash_names: bool = False
    # A device's own `nodeSelector` may hold only one term from 1.38 (kubernetes#141213), as the
    # slice's always could; a stored slice keeps it while its `spec.devices` is unchanged.
    device_node_selector_one_term: bool = True
    # The scheduler applies a DeviceTaintRule without `deviceSelector` to no device from 1.38
    # (kubernetes#141648); before, to every device (an empty `deviceSelector: {}` does in all).
    taint_rule_needs_selector: bool = True
    # The allocator matches a capacity requested as `<driver>/<name>` to one published as `<name>`,
    # and the reverse, from 1.38 (kubernetes#142202); before, only the exact key.
    capacity_names_either_way: bool = True
    # An `allocationMode: All` request that sees an incomplete or invalid pool fails only that node
    # from 1.38 (kubernetes#141898, not backported); before, the allocator returns a plain error, which
    # the scheduler takes as an error for the pod: the attempt stops for every node.
    all_pool_fails_node: bool = True
    # A device that no longer allows multiple allocations is not given out exclusively while a claim
    # still holds a share of it (`shareID`), from 1.38 (kubernetes#140798, not backported); before,
    # only exclusive allocations kept it in use.
    shares_block_exclusive: bool = True
    # 1.33's internal request still carries the `exactly` fields flat next to `firstAvailable`
    # (validation.go of 1.33): a class and `firstAvailable` conflict at the request, the other fields
    # at themselves ("must not be specified when firstAvailable is set"), tolerations never.
    flat_requests: bool = False
    # 1.37 guards consumable-capacity ranges (step > 0, bounds within int64, default errors at
    # `default`) and skips a device's unchanged capacities on update; 1.34-1.36 do none of it
    # (their step check divides by a zero step and panics).
    capacity_range_guards: bool = True
    # The tolerations of allocation results are only validated from 1.37 (validation.go of 1.33
    # and 1.35 checks a result's request, driver, pool, device, binding conditions and shareID).
    result_tolerations_checked: bool = True
    # Where a bad map key is reported: declarative validation (GA from 1.36) reports the keys of
    # attribute, capacity and counter maps at the map; 1.33-1.35 return the hand-written errors,
    # at the entry (validateMap's fldPath.Key, the key shortened in the middle past its limit).
    keys_at_map: bool = True
    # The namespace label that admin access needs (the claim strategies' namespace check, from 1.33;
    # 1.33 spelled it resource.k8s.io/admin-access, as its strategy tests show).
    admin_access_label: str | None = "resource.kubernetes.io/admin-access"
    # ValidateResourceClaimUpdate of 1.33 re-validates the (immutable) spec; from 1.35 (validation.go
    # of 1.35 and 1.37) an update only checks that the spec did not change.
    claim_update_revalidates: bool = False
    # v1alpha2 (1.27-1.30)
    alpha2_reserved_for: int = 32
    alpha2_resource_handles: int = 32
    alpha2_handle_data_bytes: int = 16 * 1024
    alpha2_potential_nodes: int = 128


# ResourceSlice counters as the 1.33/1.34 server limits them (ResourceSliceMaxSharedCounters,
# ResourceSliceMaxCountersPerDevice, ResourceSliceMaxDeviceCountersPerSlice): totals, no limit on
# the number of counter sets or of consumption entries.
_COUNTERS_1_33: dict[str, Any] = dict(counter_sets_per_slice=None, counters_per_set=None, counters_per_consumption=None,
                            shared_counters_per_slice=32, counters_per_device=32, device_counters_per_slice=1024)


# Before 1.33 the API server does not look at the namespace of an admin-access claim.
_ADMIN_LABELS: dict[int, str | None] = {**{m: None for m in range(26, 33)}, 33: "resource.k8s.io/admin-access"}
# What 1.37 and 1.38 tightened, as the releases before them had it.
_BEFORE_1_38: dict[str, Any] = dict(multi_slash_names=True, device_node_selector_one_term=False, taint_rule_needs_selector=False,
                            capacity_names_either_way=False, all_pool_fails_node=False, shares_block_exclusive=False)
_BEFORE_1_37: dict[str, Any] = dict(_BEFORE_1_38, capacity_range_guards=False, result_tolerations_checked=False)


@functools.lru_cache(maxsize=16)  # one entry per release dralint knows; asked once per object
def limits_for(minor: int) -> Limits:
    """The limits the API server of Kubernetes 1.<minor> enforces."""
    if minor <= 34:
        return Limits(taints_per_device=4, **_COUNTERS_1_33, devices_per_slice_advanced=None,
                      attribute_values=None, consumptions_per_device=None, **_BEFORE_1_37,
                      reserved_for=32 if minor <= 32 else Limits.reserved_for, flat_requests=minor == 33,
                      keys_at_map=False, admin_access_label=_ADMIN_LABELS.get(minor, Limits.admin_access_label),
                      claim_update_revalidates=minor <= 33)
    if minor == 35:
        return Limits(attribute_values=None, **_BEFORE_1_37, keys_at_map=False)
    if minor == 36:
        return Limits(**_BEFORE_1_37)
    if minor == 37:
        return Limits(**_BEFORE_1_38)
    return Limits()
