#!/usr/bin/env python3
"""Spread of the same PERF selection over several processes of vkd_custom_ops.

    perf_spread.py RUN1.json RUN2.json RUN3.json [--filter REGEX] [--markdown]

Reads the --json files of back-to-back processes and prints, per case, each process's median
us, their min / median / max and max / min, the lowest clock-probe share around the case in any
process (PerfChecks.h: below 85% the GPU ran at lowered clocks), and for the reference
backend's shapes (etvk/) its latency and median / reference.
"""
import argparse
import json
import re
import statistics
import sys


def load(path):
    with open(path) as f:
        return {r["case"]: r for r in json.load(f)["results"] if r.get("status") == "ok"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="--json files of vkd_custom_ops --mode perf")
    ap.add_argument("--filter", default="", help="only cases whose name matches REGEX")
    ap.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = ap.parse_args()
    runs = [load(p) for p in args.runs]
    names = [n for n in runs[0] if re.search(args.filter, n) and all(n in r for r in runs)]
    if not names:
        sys.exit("perf_spread: no case is in every run" + (" and matches the filter" if args.filter else ""))

    header = ["case"] + [f"run {i + 1}" for i in range(len(runs))] + [
        "min", "median", "max", "max/min", "clock", "ref us", "median/ref"]
    rows = []
    for n in names:
        us = [r[n]["median_us"] for r in runs]
        shares = [r[n].get("clock_share", 0) for r in runs if r[n].get("clock_share", 0) > 0]
        ref = runs[0][n].get("reference_us", 0)
        mid = statistics.median(us)
        rows.append([n] + [f"{u:.2f}" for u in us] + [
            f"{min(us):.2f}", f"{mid:.2f}", f"{max(us):.2f}", f"{max(us) / min(us):.2f}",
            f"{100 * min(shares):.0f}%" if shares else "-",
            f"{ref:.1f}" if ref else "-", f"{mid / ref:.2f}" if ref else "-"])
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|---" + "|---:" * (len(header) - 1) + "|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        width = max(len(n) for n in names)
        print(f"{header[0]:<{width}} " + " ".join(f"{h:>10}" for h in header[1:]))
        for row in rows:
            print(f"{row[0]:<{width}} " + " ".join(f"{c:>10}" for c in row[1:]))


if __name__ == "__main__":
    main()
