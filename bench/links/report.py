#!/usr/bin/env python3
"""The links benchmark's report (bench/links/run.sh).

  report.py RESULTS_DIR                 summary.json and table.md in RESULTS_DIR
  report.py --readme PUBLISHED README   the table between README's markers

Every figure is the min / median / max over the run's repeats of one job's
number: bus bandwidth (GB/s, nccl-tests' definition) from 64 KiB, average
latency (us) up to 1 KiB. The bound of a configuration is the sum over a
node's NICs of each NIC's one-way point-to-point bandwidth measured in the
same run (the median over repeats), turned into bus bandwidth by
busbw_bound(); a bus bandwidth above it would mean the model or the
measurement is wrong, and the table flags it. The bound counts every NIC
of a node: a job whose ranks use fewer (one rank per node on two NICs,
when ringmend's one rail takes one NIC) shows it as a low percentage.
"""
import json
import os
import statistics
import sys

SYSTEMS = ["ringmend", "openmpi_ft", "openmpi_default", "mpich"]
LATENCY_MAX = 1024
BANDWIDTH_MIN = 64 * 1024
# tc's token bucket holds 1 ms of the rate (scripts/cluster.sh): a call of a
# few buckets' bytes is partly sent at the bucket's burst, faster than the
# steady rate; the bound holds from here.
STEADY_MIN = 4 * 2**20


def human(b):
    for unit, n in (("M", 2**20), ("K", 2**10)):
        if b >= n and b % n == 0:
            return f"{b // n}{unit}"
    return str(b)


def spread(values):
    values = sorted(values)
    return {"min": values[0], "median": statistics.median(values), "max": values[-1], "n": len(values)}


def load(out):
    runs = []
    with open(os.path.join(out, "runs.tsv"), encoding="utf-8") as f:
        for line in f:
            config, what, rep, rc, wall, js, log = line.rstrip("\n").split("\t")
            runs.append({"config": config, "what": what, "rep": int(rep), "rc": int(rc), "json": js, "log": log})
    for r in runs:
        r["data"] = None
        path = os.path.join(out, r["json"])
        if r["rc"] == 0 and os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                r["data"] = json.load(f)
    return runs


def summarize(out):
    runs = load(out)
    bounds = {}  # nics -> {dev: [MB/s per rep]}
    cells = {}  # (config, system, size) -> {"busbw": [], "lat": []}
    failed = [f"{r['config']} {r['what']} #{r['rep']} (exit {r['rc']}, {r['log']})" for r in runs if r["rc"] != 0]
    for r in runs:
        if not r["data"]:
            continue
        if r["what"].startswith("p2p_"):
            rows = [x for x in r["data"]["rows"] if x.get("impl") == "ringmend"]
            if rows:
                best = max(rows, key=lambda x: x["size"])
                bounds.setdefault(r["config"], {}).setdefault(r["what"][4:], []).append(best["bandwidth_MBps"])
            continue
        for row in r["data"]["rows"]:
            system = {"ringmend": "ringmend", "mpi": "openmpi_ft"}.get(row["impl"], row["impl"])
            c = cells.setdefault((r["config"], system, row["size"]), {"busbw": [], "lat": []})
            c["busbw"].append(row["busbw_GBps"])
            c["lat"].append(row["avg_latency_us"])
    bound_gbps = {nics: sum(statistics.median(v) for v in devs.values()) / 1000.0 for nics, devs in bounds.items()}
    configs = sorted({k[0] for k in cells}, key=lambda c: [int("".join(ch for ch in p if ch.isdigit()) or 0)
                                                           for p in c.split(".")])
    summary = {"bound_GBps": bound_gbps, "bound_per_nic_MBps": {n: {d: spread(v) for d, v in devs.items()}
                                                               for n, devs in bounds.items()},
               "configs": {}, "failed": failed}
    for config in configs:
        sizes = sorted({k[2] for k in cells if k[0] == config})
        table = []
        for size in sizes:
            row = {"size": size}
            for s in SYSTEMS:
                c = cells.get((config, s, size))
                if c:
                    row[s] = {"busbw": spread(c["busbw"]), "lat": spread(c["lat"])}
            table.append(row)
        summary["configs"][config] = table
    return summary


def busbw_bound(nic_bound, config):
    """The bus bandwidth the links allow: busbw counts 2(n-1)/n bytes per byte
    of the call (n ranks), while a node's NICs send 2(N-1)/N (N nodes: a
    hierarchical allreduce reduces inside the node first, and a flat ring
    with its ranks in node order sends no more across), so the bound is
    the NICs' rate times (n-1)/n * N/(N-1)."""
    if not nic_bound:
        return None
    parts = dict((p.rstrip("0123456789"), int(p[len(p.rstrip("0123456789")):])) for p in config.split("."))
    nodes, ranks = parts["nodes"], parts["nodes"] * parts["ppn"]
    return nic_bound * (ranks - 1) / ranks * nodes / (nodes - 1)


def fmt_cell(cell, key):
    v = cell[key]
    digits = 3 if key == "busbw" else 1
    return f"{v['median']:.{digits}f} ({v['min']:.{digits}f}-{v['max']:.{digits}f})"


def table_md(summary, machine, params):
    lines = []
    lines.append(f"Machine: {machine.get('cpu_model', '?')}, {machine.get('cpus', '?')} CPUs, "
                 f"{'VM' if machine.get('virtual_machine') else 'bare metal'}, {machine.get('os', '?')}, "
                 f"kernel {machine.get('kernel', '?')}, UCX {machine.get('ucx_version', '?')}; "
                 f"commit {machine.get('git_commit', '?')[:12]}"
                 f"{' (modified)' if machine.get('git_modified') else ''}, {machine.get('date', '?')}.")
    lines.append(f"Links: every NIC shaped to {params.get('rate')} each way"
                 f"{', ' + params['delay'] + ' delay' if params.get('delay') else ''}; "
                 f"{params.get('repeats')} repeat(s); median (min-max) over the repeats.")
    lines.append("")
    for nics, bound in sorted(summary["bound_GBps"].items()):
        per = ", ".join(f"{d} {s['median']:.0f} MB/s" for d, s in sorted(summary["bound_per_nic_MBps"][nics].items()))
        lines.append(f"- {nics}: bound {bound:.3f} GB/s per node ({per}, one way, point to point)")
    lines.append("")
    for config, rows in summary["configs"].items():
        nics = config.split(".")[0]
        bound = busbw_bound(summary["bound_GBps"].get(nics), config)
        lines.append(f"### {config.replace('.', ', ')}")
        lines.append("")
        lines.append("| size | ringmend | Open MPI FT | Open MPI default | MPICH | ringmend / best MPI | % of bound |")
        lines.append("|---:|---:|---:|---:|---:|---:|---:|")
        for row in rows:
            size = row["size"]
            key = "lat" if size <= LATENCY_MAX else "busbw" if size >= BANDWIDTH_MIN else None
            if key is None:
                continue
            cells = [fmt_cell(row[s], key) if s in row else "-" for s in SYSTEMS]
            ratio, pct = "-", "-"
            base = [row[s][key]["median"] for s in SYSTEMS[1:] if s in row]
            if "ringmend" in row and base:
                mine = row["ringmend"][key]["median"]
                best = min(base) if key == "lat" else max(base)
                ratio = f"{(best / mine if key == 'lat' else mine / best):.2f}x" if mine > 0 and best > 0 else "-"
                if key == "busbw" and bound:
                    p = 100.0 * mine / bound
                    above = size >= STEADY_MIN and row["ringmend"][key]["max"] > bound * 1.05
                    pct = f"{p:.0f} %" + (" ABOVE THE BOUND" if above else "")
            unit = " us" if key == "lat" else ""
            lines.append(f"| {human(size)}{unit} | " + " | ".join(cells) + f" | {ratio} | {pct} |")
        lines.append("")
    lines.append("Up to 1 KiB: average latency in us (ratio: best MPI's latency / ringmend's); "
                 "from 64 KiB: bus bandwidth in GB/s (ratio: ringmend's / best MPI's). % of bound: "
                 "of the bus bandwidth the node's NICs allow (busbw_bound in report.py); below 4 MiB a "
                 "call is partly sent at the burst of tc's token bucket (1 ms of the rate), above "
                 "the steady rate.")
    if summary["failed"]:
        lines.append("")
        lines.append("Failed jobs: " + "; ".join(summary["failed"]))
    return "\n".join(lines) + "\n"


def write_readme(published, readme):
    with open(os.path.join(published, "table.md"), encoding="utf-8") as f:
        table = f.read()
    begin, end = "<!-- links: generated by bench/links/run.sh --publish; do not edit -->", "<!-- /links -->"
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    if begin not in text or end not in text:
        sys.exit(f"report.py: {readme} lacks the markers {begin} ... {end}")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(readme, "w", encoding="utf-8") as f:
        f.write(head + begin + "\n" + table + end + tail)


def main(argv):
    if len(argv) == 3 and argv[0] == "--readme":
        write_readme(argv[1], argv[2])
        return 0
    if len(argv) != 1:
        sys.exit(__doc__)
    out = argv[0]
    summary = summarize(out)
    with open(os.path.join(out, "machine.json"), encoding="utf-8") as f:
        machine = json.load(f)
    with open(os.path.join(out, "links.json"), encoding="utf-8") as f:
        params = json.load(f)
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    text = table_md(summary, machine, params)
    with open(os.path.join(out, "table.md"), "w", encoding="utf-8") as f:
        f.write(text)
    print(text)
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
