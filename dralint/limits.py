"""Numeric limits of the DRA API per release, in one place (kubernetes/api constants)."""
from __future__ import annotations

import functools
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
    # Attribute, capacity and constraint names with two or more slashes pass unchecked up to 1.36
    # (validateQualifiedName has no case for them); 1.37 refuses them.
    multi_slash_names: bool = False
    # v1alpha2 (1.27-1.30)
    alpha2_reserved_for: int = 32
    alpha2_resource_handles: int = 32
    alpha2_handle_data_bytes: int = 16 * 1024
    alpha2_potential_nodes: int = 128


# ResourceSlice counters as the 1.33/1.34 server limits them (ResourceSliceMaxSharedCounters,
# ResourceSliceMaxCountersPerDevice, ResourceSliceMaxDeviceCountersPerSlice): totals, no limit on
# the number of counter sets or of consumption entries.
_COUNTERS_1_33: dict = dict(counter_sets_per_slice=None, counters_per_set=None, counters_per_consumption=None,
                            shared_counters_per_slice=32, counters_per_device=32, device_counters_per_slice=1024)


@functools.lru_cache(maxsize=16)  # one entry per release dralint knows; asked once per object
def limits_for(minor: int) -> Limits:
    """The limits the API server of Kubernetes 1.<minor> enforces."""
    if minor <= 32:
        return Limits(reserved_for=32, taints_per_device=4, **_COUNTERS_1_33,
                      devices_per_slice_advanced=None, attribute_values=None, consumptions_per_device=None,
                      multi_slash_names=True)
    if minor <= 34:
        return Limits(taints_per_device=4, **_COUNTERS_1_33, devices_per_slice_advanced=None,
                      attribute_values=None, consumptions_per_device=None, multi_slash_names=True)
    if minor == 35:
        return Limits(attribute_values=None, multi_slash_names=True)
    if minor == 36:
        return Limits(multi_slash_names=True)
    return Limits()
