#!/usr/bin/env python3
"""Where a UNet iteration's time goes in several `sdspeed run --profile --report` JSONs of the same
model (scripts/device-memory.sh a: no planner, the arena with offsets, the arena through sub-buffers).

For each run: the median iteration (device time, first kernel start to last kernel end), the sum of
the ops' own times (each op's first kernel start to last kernel end) and their difference, the gaps
between ops. Then the op instances whose time differs most from the first run's. Slower kernels show
up in the per-op rows; driver overhead between launches shows up as a larger gap with equal rows."""
import json
import sys


def load(path):
    with open(path) as f:
        j = json.load(f)
    ops = {}
    for row in j.get("unet_profile", []):
        key = (row["instance"], row["variant"])
        ops[key] = ops.get(key, 0.0) + row["ms_per_step"]
    return j["time_ms"]["unet_median"], ops, j["run"]


def main(paths):
    runs = [load(p) for p in paths]
    print("run                                  UNet median ms   sum of ops ms   gaps ms   planner / binding / scratch")
    for p, (median, ops, run) in zip(paths, runs):
        total = sum(ops.values())
        print(f"{p.split('/')[-1]:36s} {median:14.2f} {total:15.2f} {median - total:9.2f}   "
              f"{run.get('planner')} / {run.get('arena_binding', '-')} / {run.get('scratch', '-')}")
    base_ops = runs[0][1]
    for p, (median, ops, run) in zip(paths[1:], runs[1:]):
        diffs = sorted(((ops.get(k, 0.0) - base_ops.get(k, 0.0), k) for k in set(ops) | set(base_ops)),
                       key=lambda d: -abs(d[0]))
        print(f"\n{p.split('/')[-1]} against {paths[0].split('/')[-1]}: "
              f"ops {sum(ops.values()) - sum(base_ops.values()):+.2f} ms, iteration {median - runs[0][0]:+.2f} ms; "
              "largest per-op differences (ms per step):")
        for d, (inst, var) in diffs[:12]:
            print(f"  {d:+8.3f}  {base_ops.get((inst, var), 0.0):8.3f} -> {ops.get((inst, var), 0.0):8.3f}  {var:20s} {inst}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: compare-profiles.py BASE.json OTHER.json [...]")
    main(sys.argv[1:])
