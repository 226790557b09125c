"""Benchmark the DRA CEL engine: compile time per selector, evaluation time per device.

Run: python bench/bench_cel.py  (prints medians; no thresholds are asserted anywhere)
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dralint.cel import CelEnv, device_from_api  # noqa: E402
from dralint.cel.selector import _compile  # noqa: E402  (uncached compile, to time the real work)

TYPICAL = ('device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "a100" && '
           'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0')
OTHERS = [
    'device.attributes["gpu.example.com"].index in [1, 2, 3]',
    'cel.bind(g, device.attributes["gpu.example.com"], g.model.startsWith("a") && g.index > 1)',
    'device.attributes["gpu.example.com"].exists(k, k.startsWith("mod"))',
    'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.0.0"))',
]


def median_us(fn, n: int) -> float:
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1e6


def main() -> None:
    env = CelEnv(37, stored=False, gates=frozenset({"DRAConsumableCapacity"}))
    device = device_from_api("gpu.example.com", {
        "attributes": {"model": {"string": "a100"}, "index": {"int": 3}, "driverVersion": {"version": "1.2.3"}},
        "capacity": {"memory": {"value": "80Gi"}}})
    for expr in [TYPICAL] + OTHERS:
        compile_us = median_us(lambda: _compile(expr, env), 300)
        program = _compile(expr, env)
        assert program.ok, program.issues
        eval_us = median_us(lambda: program.evaluate(device), 10000)
        print(f"compile {compile_us:8.1f} µs   evaluate {eval_us:6.2f} µs/device   {expr[:70]}")
    n = 10000
    program = _compile(TYPICAL, env)
    t = time.perf_counter()
    for _ in range(n):
        program.evaluate(device)
    print(f"typical selector: {(time.perf_counter() - t) / n * 1e6:.2f} µs/device mean over {n} evaluations")


if __name__ == "__main__":
    main()
