#!/usr/bin/env python3
"""bench_markdown.py — one markdown table per benchmark group from nbrma-bench's
results.csv, for doc/benchmarks.md (regenerated from a run, never appended to).

    maint/bench_markdown.py bench-results/results.csv [GROUP=PREFIX ...]
    maint/bench_markdown.py --tables bench-results/table.txt [--plots DIR] [GROUP ...]

Each GROUP=PREFIX names a table and the benchmark names it holds (those starting with
PREFIX, or exactly PREFIX without its trailing "$"; without arguments: one table per
benchmark name). Rows are benchmark and
parameter, columns the series in the order they appear; a "mpich / nbrma" column gives
MPICH's value over nbrma-blocking's (above 1: nbrma is faster) where both exist.

With --tables, the tables nbrma-bench printed (its table.txt: a "== group ==" line, a
header line and one line a row) become one markdown table a group, as printed ("-": no
value), for the named groups or all; with --plots DIR, each followed by links to the
group's plots in DIR (DIR/<group>_*.png, as nbrma-bench names them).
"""
import csv
import glob
import os
import sys


def tables(args):
    path, plots, wanted = args[0], None, []
    rest = args[1:]
    while rest:
        if rest[0] == "--plots" and len(rest) > 1:
            plots, rest = rest[1], rest[2:]
        else:
            wanted, rest = wanted + [rest[0]], rest[1:]
    sections, current = [], None
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("== ") and line.endswith(" ==") and "summary" not in line:
            current = (line[3:-3], [])
            sections.append(current)
        elif line.startswith("=="):
            current = None
        elif current is not None and line.strip():
            current[1].append(line.split())
    for group, lines in sections:
        if (wanted and group not in wanted) or not lines:
            continue
        header, body = lines[0], lines[1:]
        print("### %s\n" % group)
        print("| " + " | ".join(header) + " |")
        print("|---|---|---|" + "---:|" * (len(header) - 3))
        for cells in body:
            print("| " + " | ".join("" if c == "-" else c for c in cells) + " |")
        print()
        if plots:
            names = sorted(glob.glob(os.path.join(plots, group + "_*.png")))
            if names:
                print("Plots: " + ", ".join(
                    "[%s](%s)" % (os.path.basename(n)[len(group) + 1:-4], n) for n in names) +
                      ".\n")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--tables":
        tables(sys.argv[2:])
        return
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
