#!/usr/bin/env python3
"""Markdown table comparing sdspeed-bench with PyTorch (bench/peers/pytorch_ops.py).

Inputs: sdspeed-bench's Google Benchmark JSON (--benchmark_out_format=json) and the
JSON lines of pytorch_ops.py, joined on the op instance text. For every instance:
the fastest sdspeed variant by its median (the median_us counter: sdspeed's own
statistic over the reported run's samples; with --benchmark_repetitions the median
of the per-repetition medians), that median, PyTorch's median, the ratio PyTorch /
sdspeed (> 1: sdspeed is faster) and the fraction of the device's ceiling the sdspeed
median reaches: the larger of bytes / copy bandwidth and FLOPs / FMA rate, named
(ceilings from the JSON context, configs/devices/<key>.yaml), marked "fits in
cache" when sdspeed's rotated inputs still fit in 2x the LLC. PyTorch ops without
an sdspeed benchmark (attention_naive, families sdspeed lacks) get rows of their
own; skipped sdspeed benchmarks (failed check, unsupported) are listed below the
table. Standard library only.

usage: compare.py --sdspeed BENCH.json --pytorch PYTORCH.jsonl [--out TABLE.md]
"""

import argparse
import json
import statistics
import sys


def load_sdspeed(path):
    """(context, {instance: [benchmark rows]}, [skipped (name, message)])."""
    with open(path) as f:
        report = json.load(f)
    context = report.get("context", {})
    runs, skipped = {}, []
    for b in report.get("benchmarks", []):
        name = b.get("run_name") or b["name"]
        if name.endswith("/manual_time"):
            name = name[: -len("/manual_time")]
        parts = name.split("/", 2)
        if len(parts) != 3:
            continue
        family, variant, rest = parts
        if b.get("error_occurred"):
            skipped.append((name, b.get("error_message", "")))
            continue
        if b.get("run_type") == "aggregate" or "median_us" not in b:
            continue  # per-repetition rows carry the counters; aggregates are redundant
        row = {"family": family, "variant": variant, "label": b.get("label", ""),
               "median_us": float(b["median_us"]), "bytes": float(b.get("bytes", 0)),
               "flops": float(b.get("flops", 0)), "in_cache": bool(b.get("fits_in_cache", 0))}
        runs.setdefault(family + " " + rest, {}).setdefault(variant, []).append(row)
    # One row per (instance, variant): the median over repetitions.
    merged = {}
    for inst, variants in runs.items():
        merged[inst] = []
        for variant, rows in variants.items():
            row = dict(rows[0])
            row["median_us"] = statistics.median(r["median_us"] for r in rows)
            merged[inst].append(row)
    return context, merged, skipped


def load_pytorch(path):
    """{(op, instance): record} and the torch version and device seen."""
    out, torch_versions, devices = {}, set(), set()
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            out[(r["op"], r["instance"])] = r
            torch_versions.add(str(r.get("torch", "?")))
            devices.add(str(r.get("device", "?")))
    return out, sorted(torch_versions), sorted(devices)


def fmt_us(us):
    return "-" if us is None else ("%.2f" % us if us < 1000 else "%.0f" % us)


def ceiling_fraction(row, context):
    """The larger of copy and FMA fractions at the row's median, as 'NN.N% copy'."""
    seconds = row["median_us"] * 1e-6
    best = None
    for key, work, what in (("copy_gb_per_s", row["bytes"], "copy"), ("fma_gflop_per_s", row["flops"], "FMA")):
        try:
            ceiling = float(context.get(key, 0)) * 1e9
        except ValueError:
            ceiling = 0
        if ceiling > 0 and work > 0 and seconds > 0:
            frac = work / seconds / ceiling
            if best is None or frac > best[0]:
                best = (frac, what)
    if best is None:
        return "-"
    return "%.1f%% %s%s" % (100 * best[0], best[1], " (fits in cache)" if row.get("in_cache") else "")


def make_table(context, sdspeed, pytorch, torch_versions, devices, skipped):
    lines = ["# sdspeed vs PyTorch", ""]
    lines.append("- sdspeed: %s (%s, driver %s), commit %s" % (
        context.get("device_name", "?"), context.get("device_key", "?"), context.get("driver", "?"),
        context.get("sdspeed_commit", "?")))
    if "copy_gb_per_s" in context:
        lines.append("- ceilings: copy %.1f GB/s, FMA %.1f GFLOP/s (%s)" % (
            float(context["copy_gb_per_s"]), float(context.get("fma_gflop_per_s", 0)), context.get("ceilings", "")))
    lines.append("- PyTorch: %s on %s" % (", ".join(torch_versions) or "-", ", ".join(devices) or "-"))
    lines.append("- times: medians in microseconds; ratio = PyTorch / sdspeed (> 1: sdspeed faster)")
    lines.append("")
    lines.append("| op | shape | sdspeed best variant | sdspeed median us | PyTorch median us | ratio | % of ceiling |")
    lines.append("|---|---|---|---|---|---|---|")
    used = set()
    for inst in sorted(sdspeed, key=lambda i: (i.split(" ", 1)[0], i)):
        family, shape = inst.split(" ", 1)
        best = min(sdspeed[inst], key=lambda r: r["median_us"])
        peer = pytorch.get((family, inst))
        used.add((family, inst))
        peer_us = peer["median_ms"] * 1e3 if peer else None
        ratio = "%.2f" % (peer_us / best["median_us"]) if peer_us and best["median_us"] > 0 else "-"
        words = best["label"].split(" ")  # "params=tuned|default POINT ..." (sdspeed-bench)
        variant = best["variant"]
        if len(words) >= 2 and words[0].startswith("params="):
            # "source=" says where tuned parameters came from: the instance's own entry
            # (exact) or a fallback (nearest shape, device default: another instance's).
            source = " ".join(words[2:]).split("source=", 1)[1] if "source=" in best["label"] else "exact"
            source = "nearest shape" if source.startswith("nearest") else source.split(" (")[0].strip()
            how = words[0][len("params="):]
            if how == "tuned" and source != "exact":
                how = "tuned: %s," % source
            variant += " (%s %s)" % (how, words[1])
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            family, shape, variant, fmt_us(best["median_us"]), fmt_us(peer_us), ratio,
            ceiling_fraction(best, context)))
    for (op, inst), r in sorted(pytorch.items()):
        if (op, inst) in used:
            continue
        shape = inst.split(" ", 1)[1] if " " in inst else inst
        lines.append("| %s | %s | - | - | %s | - | - |" % (op, shape, fmt_us(r["median_ms"] * 1e3)))
    if skipped:
        lines += ["", "Skipped sdspeed benchmarks:", ""]
        lines += ["- `%s`: %s" % (name, msg) for name, msg in skipped]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sdspeed", required=True, help="sdspeed-bench JSON (--benchmark_out_format=json)")
    ap.add_argument("--pytorch", required=True, help="pytorch_ops.py JSON lines")
    ap.add_argument("--out", help="write the Markdown table here (default stdout)")
    args = ap.parse_args(argv)
    context, sdspeed, skipped = load_sdspeed(args.sdspeed)
    pytorch, torch_versions, devices = load_pytorch(args.pytorch)
    table = make_table(context, sdspeed, pytorch, torch_versions, devices, skipped)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table)
    else:
        sys.stdout.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
