# SPDX-License-Identifier: Apache-2.0
"""Summarizes a chash_bench JSON file (--benchmark_out=FILE --benchmark_repetitions=R) as Markdown.

    python3 bench/report.py results.json [FILTER_REGEX]

Per benchmark: the least time over the repetitions (the run least disturbed by other processes on
the machine — the figure the targets use), the median, and the spread (max-min)/min, plus the
counters of the first repetition (items/s as the least-disturbed = highest rate).
"""
import json
import re
import sys
from collections import OrderedDict


def main():
    data = json.load(open(sys.argv[1]))
    pattern = re.compile(sys.argv[2]) if len(sys.argv) > 2 else None
    runs = OrderedDict()
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        name = b["run_name"] if "run_name" in b else b["name"]
        if pattern and not pattern.search(name):
            continue
        runs.setdefault(name, []).append(b)
    print("| benchmark | min | median | spread | counters |")
    print("|---|---:|---:|---:|---|")
    for name, bs in runs.items():
        if bs[0].get("error_occurred"):
            print(f"| {name} | - | - | - | skipped: {bs[0].get('error_message', '')} |")
            continue
        unit = bs[0].get("time_unit", "ns")
        times = sorted(b["real_time"] for b in bs)
        med = times[len(times) // 2]
        spread = (times[-1] - times[0]) / times[0] * 100 if times[0] else 0
        counters = []
        for key in bs[0]:
            if key in ("name", "run_name", "run_type", "repetitions", "repetition_index", "threads",
                       "iterations", "real_time", "cpu_time", "time_unit", "family_index",
                       "per_family_instance_index", "aggregate_name", "aggregate_unit",
                       "error_occurred", "error_message"):
                continue
            vals = [b[key] for b in bs if key in b]
            v = max(vals) if key.endswith("per_second") else vals[0]
            if key == "items_per_second":
                counters.append(f"{v / 1e6:.1f} M/s")
            elif isinstance(v, float):
                counters.append(f"{key}={v:.4g}")
        print(f"| {name} | {times[0]:.4g} {unit} | {med:.4g} {unit} | {spread:.0f}% | {', '.join(counters)} |")


main()
