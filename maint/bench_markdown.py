#!/usr/bin/env python3
"""bench_markdown.py — one markdown table per benchmark group from nbrma-bench's
results.csv, for doc/benchmarks.md (regenerated from a run, never appended to).

    maint/bench_markdown.py bench-results/results.csv [GROUP=PREFIX ...]

Each GROUP=PREFIX names a table and the benchmark names it holds (those starting with
PREFIX, or exactly PREFIX without its trailing "$"; without arguments: one table per
benchmark name). Rows are benchmark and
parameter, columns the series in the order they appear; a "mpich / nbrma" column gives
MPICH's value over nbrma-blocking's (above 1: nbrma is faster) where both exist.
"""
import csv
import sys


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    groups = [a.split("=", 1) for a in sys.argv[2:]] or sorted(
        {(r["benchmark"], r["benchmark"]) for r in rows})
    for title, prefix in groups:
        if prefix.endswith("$"):
            chosen = [r for r in rows if r["benchmark"] == prefix[:-1]]
        else:
            chosen = [r for r in rows if r["benchmark"].startswith(prefix)]
        if not chosen:
            continue
        series = []
        for r in chosen:
            if r["series"] not in series and r["series"] != "raw-shm":
                series.append(r["series"])
        keys, values = [], {}
        for r in chosen:
            key = (r["benchmark"], r["parameter"])
            if key not in values:
                keys.append(key)
                values[key] = {}
            values[key][r["series"]] = r["value"]
        unit = chosen[0]["unit"]
        ratio = "mpich" in series and "nbrma-blocking" in series
        print("### %s (%s)\n" % (title, unit))
        print("| benchmark | parameter | " + " | ".join(series) +
              (" | mpich / nbrma |" if ratio else " |"))
        print("|---|---|" + "---:|" * (len(series) + ratio))
        for key in keys:
            cells = ["%.4g" % float(values[key][s]) if s in values[key] else "" for s in series]
            line = "| %s | %s | %s |" % (key[0], key[1], " | ".join(cells))
            if ratio:
                m, n = values[key].get("mpich"), values[key].get("nbrma-blocking")
                line += " %s |" % ("%.2f" % (float(m) / float(n)) if m and n and float(n) else "")
            print(line)
        print()


if __name__ == "__main__":
    main()
