#!/usr/bin/env python3
"""Machine description and report of a bench/run_standard.sh results directory.

  bench_report.py machine OUT_JSON [--command TEXT] [--mode full|quick] [--mpirun PATH]
  bench_report.py loadavg OUT_JSON          (adds the load average at the end)
  bench_report.py report RESULTS_DIR        (summary.json, table.md, plots/*.dat, *.png)
  bench_report.py readme RESULTS_DIR README [--check]
                                            (the README's speed section from RESULTS_DIR/summary.json;
                                             --check: exit 1 when the README holds something else)
  bench_report.py check FILE...             (exit 1 unless every result file follows the schema of
                                             bench/README.md, "JSON files")

The report reads RESULTS_DIR/runs.tsv (one line per job: part, config,
benchmark, repeat, ranks, exit status, wall seconds, JSON file, log file) and
the JSON files of the benchmark programs. Throughput figures are the median
over the repeats (busbw from the median latency); recovery figures the
median, mean, minimum and maximum over the rounds. Only the Python standard
library is used; the PNGs need gnuplot.
"""

import json
import math
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import time

# ------------------------------------------------------------------ helpers


def run_text(cmd, cwd=None):
    try:
        out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=20)
        return out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def human_size(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= (1 << shift) and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


def sig(x, digits=3):
    """x with `digits` significant digits (whole numbers from 10^(digits-1) up)."""
    if x is None:
        return "–"
    if x == 0:
        return "0"
    if abs(x) >= 10 ** (digits - 1):
        return f"{x:.0f}"
    decimals = digits - 1 - math.floor(math.log10(abs(x)))
    return f"{x:.{decimals}f}"


def stats(values):
    v = [x for x in values if x is not None]
    if not v:
        return None
    return {
        "median": statistics.median(v),
        "avg": sum(v) / len(v),
        "min": min(v),
        "max": max(v),
        "n": len(v),
    }


# ------------------------------------------------------------------ machine


def machine(out_path, command, mode, mpirun):
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    info = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    info["hostname"] = socket.gethostname()
    cpu = ""
    for line in read_text("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    info["cpu_model"] = cpu or platform.processor()
    info["cpus"] = os.cpu_count()
    mem_kib = 0
    for line in read_text("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            mem_kib = int(line.split()[1])
    info["memory_GiB"] = round(mem_kib / 2**20, 1)
    osr = {}
    for line in read_text("/etc/os-release").splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            osr[k] = v.strip('"')
    info["os"] = osr.get("PRETTY_NAME", platform.platform())
    info["kernel"] = platform.release()
    vm = run_text(["systemd-detect-virt", "--vm"])
    container = run_text(["systemd-detect-virt", "--container"])
    hypervisor = "hypervisor" in read_text("/proc/cpuinfo").split()
    info["virtual_machine"] = hypervisor or vm not in ("", "none")
    info["systemd_detect_virt_vm"] = vm or "none"
    info["container"] = container if container and container != "none" else "none"
    info["git_commit"] = run_text(["git", "rev-parse", "HEAD"], cwd=top)
    info["git_modified"] = bool(run_text(["git", "status", "--porcelain", "--untracked-files=no"], cwd=top))
    ver = run_text([mpirun, "--version"]) if mpirun else ""
    # Home-relative, so that a published record names no user's directory.
    home = os.path.expanduser("~")
    info["mpirun"] = "~" + mpirun[len(home):] if mpirun and home not in ("", "/") and mpirun.startswith(home + "/") else mpirun
    info["mpirun_version"] = ver.splitlines()[0] if ver else ""
    ucx = run_text(["ucx_info", "-v"])
    info["ucx_version"] = ucx.splitlines()[0].lstrip("# ").replace("Version", "").strip() if ucx else ""
    info["gnuplot_version"] = run_text(["gnuplot", "--version"])
    info["load_average_start"] = read_text("/proc/loadavg").split()[:3]
    info["command"] = command
    info["mode"] = mode
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(info, f, indent=2)
        f.write("\n")


def loadavg(path):
    with open(path, encoding="utf-8") as f:
        info = json.load(f)
    info["load_average_end"] = read_text("/proc/loadavg").split()[:3]
    info["date_end"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with open(path, "w", encoding="utf-8") as f:
        json.dump(info, f, indent=2)
        f.write("\n")


# ------------------------------------------------------------------ report

CONFIGS = {
    "one_node": "One node, 2 ranks",
    "one_node_4": "One node, 4 ranks (more ranks than cores where the node has fewer than 4)",
    "cluster_1ppn": "Two nodes (local Slurm cluster), 1 rank per node",
    "cluster_2ppn": "Two nodes (local Slurm cluster), 2 ranks per node",
}
IMPLS = [
    ("ringmend", "ringmend"),
    ("mpi", "Open MPI FT"),
    ("openmpi_default", "Open MPI default"),
    ("mpich", "MPICH"),
    ("gloo", "Gloo"),
]
# The MPI columns a user would pick instead of ringmend: Open MPI in ringmend's
# fault-tolerant configuration (ob1, TCP, HAN off: the fair column for fault
# tolerance), in its default configuration, and MPICH (bench/mpi_allreduce.c).
MPI_BASELINES = ("mpi", "openmpi_default", "mpich")


def best_baseline(by, size, key):
    """The best MPI figure at `size` (the highest busbw, or the lowest latency), and whose."""
    cands = [(by[k][size][key], k) for k in MPI_BASELINES if k in by and size in by[k]]
    if not cands:
        return None, None
    return (max(cands) if key == "busbw_GBps" else min(cands))


def load_runs(d):
    runs = []
    path = os.path.join(d, "runs.tsv")
    for line in read_text(path).splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        f = line.split("\t")
        if len(f) < 9:
            continue
        r = {
            "part": f[0],
            "config": f[1],
            "bench": f[2],
            "rep": int(f[3]),
            "ranks": int(f[4]),
            "status": int(f[5]),
            "wall_s": float(f[6]),
            "json": f[7],
            "log": f[8],
            "data": None,
        }
        if r["json"] and r["status"] == 0:
            try:
                with open(os.path.join(d, r["json"]), encoding="utf-8") as jf:
                    r["data"] = json.load(jf)
            except (OSError, ValueError):
                r["status"] = -1  # finished but left no readable result
        runs.append(r)
    return runs


# The point-to-point programs: JSON "benchmark" -> the value of a row.
P2P_VALUES = {"p2p_bw": "bandwidth_MBps", "p2p_bibw": "bandwidth_MBps", "p2p_latency": "latency_us"}


def p2p_key(row, params):
    """The summary's key and the transport of a point-to-point row: "mpi", "ringmend"
    (over UCX, also in files older than --transport) or "ringmend_<transport>"."""
    if row.get("impl") == "mpi":
        return "mpi", "mpi"
    impl = row.get("impl") or "ringmend"
    transport = row.get("transport") or params.get("transport") or "ucx"
    return (impl if transport == "ucx" else f"{impl}_{transport}"), transport


def throughput(runs):
    """config -> impl -> size -> lists; plus the memory bound and p2p (benchmark -> config -> key -> rows)."""
    acc, bound, wrong, factors, gloo_version = {}, {}, {}, {}, ""
    p2p, p2p_transport = {b: {} for b in P2P_VALUES}, {}
    for r in runs:
        if r["part"] != "throughput" or not r["data"]:
            continue
        data, cfg = r["data"], r["config"]
        if data.get("benchmark") in ("allreduce", "gloo_allreduce"):
            factors[cfg] = data["parameters"].get("busbw_factor", 1.0)
            if data["benchmark"] == "gloo_allreduce":
                gloo_version = data["run"].get("gloo_version", gloo_version)
            for row in data["rows"]:
                a = acc.setdefault(cfg, {}).setdefault(row["impl"], {}).setdefault(row["size"], [])
                a.append(row["avg_latency_us"])
                if row.get("bound_busbw_GBps") is not None and row["impl"] == "ringmend":
                    bound.setdefault(cfg, {}).setdefault(row["size"], []).append(row["bound_busbw_GBps"])
                if row.get("wrong") is not None:
                    w = wrong.setdefault(cfg, {}).setdefault(row["impl"], [0, 0])
                    w[0] += row["wrong"]
                    w[1] += 1
        elif data.get("benchmark") in P2P_VALUES:
            field = P2P_VALUES[data["benchmark"]]
            params = data.get("parameters") or {}
            for row in data["rows"]:
                if row.get(field) is None:
                    continue
                key, transport = p2p_key(row, params)
                p2p_transport[key] = transport
                p2p[data["benchmark"]].setdefault(cfg, {}).setdefault(key, {}).setdefault(row["size"], []).append(
                    row[field]
                )
    out = {}
    for cfg, impls in acc.items():
        out[cfg] = {}
        for impl, sizes in impls.items():
            rows = []
            for size in sorted(sizes):
                lats = sizes[size]
                med = statistics.median(lats)
                bus = lambda lat: size / (lat * 1e3) * factors[cfg] if lat > 0 else 0.0  # noqa: E731
                rows.append(
                    {
                        "size": size,
                        "avg_latency_us": med,
                        "avg_latency_us_min": min(lats),
                        "avg_latency_us_max": max(lats),
                        "busbw_GBps": bus(med),
                        "busbw_GBps_min": bus(max(lats)),
                        "busbw_GBps_max": bus(min(lats)),
                        "runs": len(lats),
                    }
                )
            out[cfg][impl] = rows
    bound_out = {
        cfg: [{"size": s, "busbw_GBps": statistics.median(v), "runs": len(v)} for s, v in sorted(sizes.items())]
        for cfg, sizes in bound.items()
    }
    p2p_out = {
        bench: {
            cfg: {
                key: [
                    {"size": s, field: statistics.median(v), "runs": len(v), "transport": p2p_transport[key]}
                    for s, v in sorted(sizes.items())
                ]
                for key, sizes in keys.items()
            }
            for cfg, keys in p2p[bench].items()
        }
        for bench, field in P2P_VALUES.items()
    }
    wrong_out = {cfg: {impl: {"wrong": w[0], "rows_checked": w[1]} for impl, w in v.items()} for cfg, v in wrong.items()}
    return out, bound_out, p2p_out, wrong_out, gloo_version


RINGMEND_PHASES = ["detect", "shrink", "rebuild", "recovery", "reexec", "first"]
ULFM_PHASES = ["detect", "revoke", "shrink", "allgather", "agree", "first"]


def recovery(runs):
    per = {}
    for r in runs:
        if r["part"] != "recovery":
            continue
        n = r["ranks"]  # ranks before the failure (a restart runs with one fewer)
        e = per.setdefault(n, {"ringmend": {}, "ulfm": {}, "restart": {}, "wrong": 0, "failed": 0})
        if r["status"] != 0 or not r["data"]:
            e["failed"] += 1
            continue
        if r["bench"] in ("ringmend", "ulfm"):
            phases = RINGMEND_PHASES if r["bench"] == "ringmend" else ULFM_PHASES
            for row in r["data"]["rows"]:
                e["wrong"] += row.get("wrong", 0)
                for p in phases:
                    e[r["bench"]].setdefault(p, []).append(row.get(p + "_ms"))
        elif r["bench"] == "restart":
            e["restart"].setdefault("wall", []).append(r["wall_s"] * 1e3)
            row = r["data"]["rows"][0]
            for k in ("mpi_init", "runtime_start", "first_allreduce", "finalize", "in_process"):
                e["restart"].setdefault(k, []).append(row.get(k + "_ms"))
    out = {}
    for n in sorted(per):
        e = per[n]
        out[n] = {
            "ringmend": {p: stats(v) for p, v in e["ringmend"].items()},
            "ulfm": {p: stats(v) for p, v in e["ulfm"].items()},
            "restart": {p: stats(v) for p, v in e["restart"].items()},
            "wrong": e["wrong"],
            "failed_jobs": e["failed"],
        }
    return out


def table_sizes(sizes):
    """Sizes of the latency table and of the bandwidth table."""
    small = [b for b in (4, 256, 4096) if b in sizes]
    large = [b for b in (65536, 1 << 20, 4 << 20, 16 << 20) if b in sizes]
    if sizes and max(sizes) > 4096 and max(sizes) not in large:
        large.append(max(sizes))
    return small, large


def network_p2p(summary, bench, cfg):
    """{key: {size: row}} of a point-to-point program in a configuration, for
    the allreduce table and plot: only where ringmend's side ran over UCX (the
    one-node shared-memory runs have a section of their own)."""
    keys = (summary.get(bench) or {}).get(cfg, {})
    if "ringmend" not in keys:
        return {}
    return {k: {row["size"]: row for row in rows} for k, rows in keys.items() if k in ("ringmend", "mpi")}


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


P2P_SHM_SIZES = (8, 1 << 10, 64 << 10, 1 << 20, 4 << 20)


def shm_p2p_section(L, summary):
    """One node, point to point: ringmend's shared-memory channel against MPI."""
    bw = {k: {r["size"]: r["bandwidth_MBps"] for r in rows}
          for k, rows in (summary.get("p2p_bw") or {}).get("one_node", {}).items()}
    lat = {k: {r["size"]: r["latency_us"] for r in rows}
           for k, rows in (summary.get("p2p_latency") or {}).get("one_node", {}).items()}
    shm_bw, mpi_bw = bw.get("ringmend_shm", {}), bw.get("mpi", {})
    shm_lat, mpi_lat = lat.get("ringmend_shm", {}), lat.get("mpi", {})
    sizes = [b for b in P2P_SHM_SIZES if any(b in m for m in (shm_bw, mpi_bw, shm_lat, mpi_lat))]
    if not sizes:
        return
    runs = max((r["runs"] for k in ("p2p_bw", "p2p_latency")
                for rows in (summary.get(k) or {}).get("one_node", {}).values() for r in rows), default=0)
    L.append("### One node, point to point (shared memory)")
    L.append("")
    head = ["size", "ringmend shm bw (MB/s)", "MPI bw (MB/s)", "ratio",
            "ringmend shm latency (µs)", "MPI latency (µs)", "ratio"]
    L.append("| " + " | ".join(head) + " |")
    L.append("|" + "---|" * len(head))
    for b in sizes:
        sb, mb, sl, ml = shm_bw.get(b), mpi_bw.get(b), shm_lat.get(b), mpi_lat.get(b)
        row = [human_size(b), sig(sb), sig(mb), sig(ratio(sb, mb)), sig(sl), sig(ml), sig(ratio(ml, sl))]
        L.append("| " + " | ".join(row) + " |")
    L.append("")
    L.append(
        "ringmend_p2p_bw and ringmend_p2p_latency with `--transport shm --impl both`, 2 ranks on one node "
        f"(median of {runs} run(s)): ringmend's shared-memory channel (ShmChannel) against "
        "MPI_Isend/MPI_Irecv of the same MPI (Open MPI ob1 with its sm BTL); osu_bw and osu_latency methods, "
        "MB = 10⁶ bytes. Bandwidth ratio: ringmend / MPI; latency ratio: MPI / ringmend; above 1 means "
        "ringmend's channel is faster."
    )
    L.append("")


def spread(row, key):
    """median [min–max] of a throughput row's `key` over the runs."""
    if not row:
        return "–"
    if row.get("runs", 1) < 2:
        return sig(row[key])
    return f"{sig(row[key])} [{sig(row[key + '_min'])}–{sig(row[key + '_max'])}]"


def cell_ms(s):
    if not s:
        return "–"
    return f"{sig(s['median'])} [{sig(s['min'])}–{sig(s['max'])}]"


def allreduce_section(L, summary, cfg, title):
    thr, bound = summary["allreduce"], summary["bound"]
    impls = [(k, name) for k, name in IMPLS if k in thr[cfg]]
    by = {k: {row["size"]: row for row in thr[cfg][k]} for k, _ in impls}
    sizes = sorted(set().union(*[set(v) for v in by.values()]))
    rf = {row["size"]: row for row in bound.get(cfg, [])}
    pp = network_p2p(summary, "p2p_bw", cfg)
    bb = network_p2p(summary, "p2p_bibw", cfg).get("ringmend", {})
    small, large = table_sizes(sizes)
    L.append(f"### {title}: allreduce, float sum")
    L.append("")
    names = dict(IMPLS)
    if small:
        both = "ringmend" in by and "mpi" in by
        best = "ringmend" in by and any(k in by for k in MPI_BASELINES if k != "mpi")
        head = (
            ["avg latency (µs)"]
            + [name for _, name in impls]
            + (["ringmend / Open MPI FT"] if both else [])
            + (["ringmend / best MPI"] if best else [])
        )
        L.append("| " + " | ".join(head) + " |")
        L.append("|" + "---|" * len(head))
        for b in small:
            row = [human_size(b)] + [spread(by[k].get(b), "avg_latency_us") for k, _ in impls]
            if both:
                r = ratio(by["ringmend"][b]["avg_latency_us"], by["mpi"][b]["avg_latency_us"]) if b in by["mpi"] else None
                row.append(sig(r) if r is not None else "–")
            if best:
                v, who = best_baseline(by, b, "avg_latency_us")
                r = ratio(by["ringmend"][b]["avg_latency_us"], v) if b in by["ringmend"] and v else None
                row.append(f"{sig(r)} ({names[who]})" if r is not None else "–")
            L.append("| " + " | ".join(row) + " |")
        L.append("")
    if large:
        both = "ringmend" in by and "mpi" in by
        best = "ringmend" in by and any(k in by for k in MPI_BASELINES if k != "mpi")
        head = (
            ["busbw (GB/s)"]
            + [name for _, name in impls]
            + (["ringmend / Open MPI FT"] if both else [])
            + (["ringmend / best MPI"] if best else [])
        )
        if rf:
            head += ["memory bound", "ringmend % of bound"]
        for impl in ("ringmend", "mpi"):
            if impl in pp:
                head.append(("p2p ringmend UCX" if impl == "ringmend" else "p2p MPI"))
        if bb:
            head += ["bibw/dir ringmend UCX", "ringmend % of bibw/dir"]
        L.append("| " + " | ".join(head) + " |")
        L.append("|" + "---|" * len(head))
        for b in large:
            row = [human_size(b)] + [spread(by[k].get(b), "busbw_GBps") for k, _ in impls]
            if both:
                r = ratio(by["ringmend"][b]["busbw_GBps"], by["mpi"][b]["busbw_GBps"]) if b in by["mpi"] else None
                row.append(sig(r) if r is not None else "–")
            if best:
                v, who = best_baseline(by, b, "busbw_GBps")
                r = ratio(by["ringmend"][b]["busbw_GBps"], v) if b in by["ringmend"] and v else None
                row.append(f"{sig(r)} ({names[who]})" if r is not None else "–")
            if rf:
                bus = by["ringmend"][b]["busbw_GBps"] if b in by.get("ringmend", {}) else None
                pct = ratio(bus, rf[b]["busbw_GBps"]) if b in rf else None
                row += [sig(rf[b]["busbw_GBps"]) if b in rf else "–", sig(pct * 100) if pct is not None else "–"]
            for impl in ("ringmend", "mpi"):
                if impl in pp:
                    row.append(sig(pp[impl][b]["bandwidth_MBps"] / 1e3) if b in pp[impl] else "–")
            if bb:
                per_dir = bb[b]["bandwidth_MBps"] / 2 / 1e3 if b in bb else None
                bus = by["ringmend"][b]["busbw_GBps"] if b in by.get("ringmend", {}) else None
                pct = ratio(bus, per_dir)
                row += [sig(per_dir), sig(pct * 100) if pct is not None else "–"]
            L.append("| " + " | ".join(row) + " |")
        L.append("")
        legend = []
        if pp:
            legend.append(
                "p2p: streaming bandwidth between the two nodes (ringmend_p2p_bw, 1 rank per node, "
                "osu_bw method) in GB/s, for reference."
            )
        if bb:
            legend.append(
                "bibw/dir ringmend UCX: ringmend_p2p_bibw over ringmend's UCX transport (osu_bibw method: "
                "both ranks post a window of receives and a window of sends at once) — the bandwidth of both "
                "directions together, halved, in GB/s at the same size. Every rank of a ring allreduce sends "
                "to one neighbour while it receives from the other, and its busbw is the rate of one of those "
                "directions, so this, not the one-way p2p figure, bounds ringmend's busbw where both "
                "directions share the CPUs that move the bytes (TCP over loopback). ringmend % of bibw/dir: "
                "ringmend's busbw / bibw/dir × 100."
            )
        if legend:
            L.append(" ".join(legend))
            L.append("")
    w = summary["validation"].get(cfg, {})
    if w:
        parts = [f"{name}: {w[k]['wrong']} wrong elements" for k, name in IMPLS if k in w]
        L.append(
            "Validation (`-c`, first run): "
            + "; ".join(parts)
            + " (Open MPI FT's results, measured inside ringmend_allreduce, are not checked)."
        )
        L.append("")


def write_table(d, mach, summary):
    L = []
    quick = mach.get("mode") == "quick"
    L.append("## Benchmark results" + (" (QUICK MODE: a smoke run, not for publication)" if quick else ""))
    L.append("")
    gv = f", Gloo {summary['gloo_version']}" if summary.get("gloo_version") else ""
    if mach.get("virtual_machine"):
        virt = f"a virtual machine (systemd-detect-virt: {mach.get('systemd_detect_virt_vm', '?')})"
    else:
        virt = "not virtualised"
    if mach.get("container", "none") != "none":
        virt += f", in a container ({mach['container']})"
    L.append(
        f"Measured {mach.get('date', '?')} on `{mach.get('hostname', '?')}`: {mach.get('cpu_model', '?')}, "
        f"{mach.get('cpus', '?')} CPUs, {mach.get('memory_GiB', '?')} GiB, {mach.get('os', '?')} "
        f"(kernel {mach.get('kernel', '?')}; {virt}); "
        f"{mach.get('mpirun_version', '?')} with ULFM (pml ob1), UCX {mach.get('ucx_version', '?')}{gv}; "
        f"ringmend at git {mach.get('git_commit', '?')[:12]}{' (with local changes)' if mach.get('git_modified') else ''}. "
        f"Load average {' '.join(mach.get('load_average_start', []))} at the start, "
        f"{' '.join(mach.get('load_average_end', []) or ['?'])} at the end."
    )
    L.append("")
    L.append(f"Command: `{mach.get('command', '?')}`." + (" " + summary["method"] if summary["allreduce"] else ""))
    L.append("")
    thr = summary["allreduce"]
    if thr:
        L.append(
            "Columns: **Open MPI FT** is MPI_Allreduce in ringmend's own jobs, Open MPI in the fault-tolerant "
            "configuration ringmend needs (ULFM, pml ob1, TCP, HAN off); **Open MPI default** is the same "
            "Open MPI's mpirun with no MCA setting, and **MPICH** Debian's MPICH under its own launcher, both "
            "running bench/mpi_allreduce.c (MPI_Allreduce alone, timed as ringmend_allreduce times, results "
            "checked): what a user who gives up fault tolerance runs instead. **ringmend / best MPI** compares "
            "with the best of the three at each size (named). OSU's osu_allreduce itself is not run: neither "
            "Debian nor PyPI packages it; the programs here use its method and counts."
        )
        L.append("")
    not_run = [(k[len("baseline_"):], why) for k, why in summary["skipped"].items() if k.startswith("baseline_")]
    if not_run:
        names = dict(IMPLS)
        L.append("Baselines not measured: " + "; ".join(f"{names.get(k, k)}: {why}" for k, why in not_run) + ".")
        L.append("")
    for cfg, title in CONFIGS.items():
        if cfg not in thr:
            skipped = summary["skipped"].get(cfg)
            if skipped:
                L.append(f"### {title}")
                L.append("")
                L.append(f"Not measured: {skipped}")
                L.append("")
        else:
            allreduce_section(L, summary, cfg, title)
        if cfg == "one_node":
            shm_p2p_section(L, summary)
    rec = summary["recovery"]
    if rec:
        p = summary["recovery_parameters"]
        L.append(
            f"### Recovery after one SIGKILLed rank (one node; {p.get('size_text', '?')} float allreduce; "
            f"ms, median [min–max] over {p.get('rounds', '?')} rounds, one job per round)"
        )
        L.append("")
        L.append(
            "| ranks | detect | revoke+shrink | rebuild | agree+shrink+rebuild | re-execution | death → first collective | "
            "ULFM detect | ULFM shrink | ULFM allgather | ULFM agree | ULFM death → first MPI_Allreduce | restart with N−1 ranks |"
        )
        L.append("|" + "---|" * 13)
        for n, e in rec.items():
            rm, ul, rs = e["ringmend"], e["ulfm"], e["restart"]
            L.append(
                f"| {n} | {cell_ms(rm.get('detect'))} | {cell_ms(rm.get('shrink'))} | {cell_ms(rm.get('rebuild'))} | "
                f"{cell_ms(rm.get('recovery'))} | {cell_ms(rm.get('reexec'))} | "
                f"{cell_ms(rm.get('first'))} | {cell_ms(ul.get('detect'))} | {cell_ms(ul.get('shrink'))} | "
                f"{cell_ms(ul.get('allgather'))} | {cell_ms(ul.get('agree'))} | {cell_ms(ul.get('first'))} | {cell_ms(rs.get('wall'))} |"
            )
        L.append("")
        wrong = sum(e["wrong"] for e in rec.values())
        failed = sum(e["failed_jobs"] for e in rec.values())
        L.append(
            f"The allreduce interrupted by the failure was checked on every survivor: {wrong} wrong elements. "
            f"{failed} recovery job(s) failed."
        )
        L.append("")
        L.append(summary["recovery_method"])
        L.append("")
    if summary["failures"]:
        L.append("### Runs that failed")
        L.append("")
        for f in summary["failures"]:
            L.append(f"- {f}")
        L.append("")
    if summary["plots"]:
        L.append("Plots: " + ", ".join(f"`{p}`" for p in summary["plots"]) + ".")
        L.append("")
    with open(os.path.join(d, "table.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(L))


def size_label(b):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if b >= (1 << shift):
            return f"{b >> shift}{unit}"
    return str(b)


def x_tics(lo, hi):
    """Powers of 4 (and 1) from lo to hi, at most about 12 of them."""
    tics, b = [], 1
    while b <= hi:
        if b >= lo:
            tics.append(b)
        b *= 4
    while len(tics) > 12:
        tics = tics[::2]
    return tics


def write_plots(d, summary):
    """Writes plots/*.dat and plots/plots.gp; runs gnuplot if there is one."""
    pdir = os.path.join(d, "plots")
    os.makedirs(pdir, exist_ok=True)
    gp = []
    pngs = []
    gp.append("set terminal pngcairo size 960,600 noenhanced font 'sans,11'")
    gp.append("set grid")
    gp.append("set key bottom right box opaque")
    gp.append("set logscale x 2")
    gp.append("set logscale y 10")
    gp.append("set format y '%g'")
    thr, bound = summary["allreduce"], summary["bound"]
    styles = {
        "ringmend": "lc rgb '#1f77b4'",
        "mpi": "lc rgb '#d62728'",
        "openmpi_default": "lc rgb '#ff7f0e'",
        "mpich": "lc rgb '#8c564b'",
        "gloo": "lc rgb '#2ca02c'",
    }
    for cfg, title in CONFIGS.items():
        if cfg not in thr:
            continue
        plots = []
        for impl, name in IMPLS:
            if impl not in thr[cfg]:
                continue
            f = f"{cfg}_{impl}.dat"
            with open(os.path.join(pdir, f), "w") as o:
                o.write("# size busbw_median busbw_min busbw_max avg_latency_us_median\n")
                for r in thr[cfg][impl]:
                    o.write(
                        f"{r['size']} {r['busbw_GBps']:.6g} {r['busbw_GBps_min']:.6g} {r['busbw_GBps_max']:.6g} "
                        f"{r['avg_latency_us']:.6g}\n"
                    )
            plots.append(f"'{f}' using 1:2:3:4 with yerrorlines {styles[impl]} pt 7 ps 0.6 title '{name}'")
        if cfg in bound:
            f = f"{cfg}_bound.dat"
            with open(os.path.join(pdir, f), "w") as o:
                o.write("# size bound_busbw\n")
                for r in bound[cfg]:
                    o.write(f"{r['size']} {r['busbw_GBps']:.6g}\n")
            plots.append(f"'{f}' using 1:2 with lines dt 2 lw 2 lc rgb 'black' title 'memory bound'")
        # Point to point over the network (UCX) only: the one-node runs are over shared memory.
        p2p_sizes = []
        # The bibw line has a colour and points of its own: gnuplot's plain png
        # terminal (no pngcairo) draws every dash type solid.
        for bench, impl, name, div, style in (
            ("p2p_bw", "ringmend", "p2p bw, ringmend UCX", 1, f"lines dt 3 lw 2 {styles['ringmend']}"),
            ("p2p_bw", "mpi", "p2p bw, MPI", 1, f"lines dt 3 lw 2 {styles['mpi']}"),
            ("p2p_bibw", "ringmend", "p2p bibw / 2 (per direction), ringmend UCX", 2,
             "linespoints dt 4 lw 2 lc rgb '#9467bd' pt 6 ps 0.8"),
        ):
            rows = network_p2p(summary, bench, cfg).get(impl)
            if not rows:
                continue
            f = f"{cfg}_p2p_{impl}.dat" if bench == "p2p_bw" else f"{cfg}_{bench}_{impl}.dat"
            with open(os.path.join(pdir, f), "w") as o:
                o.write("# size bandwidth_GBps" + (" (both directions / 2)" if div == 2 else "") + "\n")
                for size in sorted(rows):
                    o.write(f"{size} {rows[size]['bandwidth_MBps'] / div / 1e3:.6g}\n")
            p2p_sizes += list(rows)
            plots.append(f"'{f}' using 1:2 with {style} title '{name}'")
        png = f"allreduce_{cfg}.png"
        pngs.append(png)
        sizes = [r["size"] for rows in thr[cfg].values() for r in rows]
        sizes += p2p_sizes
        gp.append("set xtics (" + ", ".join(f"'{size_label(b)}' {b}" for b in x_tics(min(sizes), max(sizes))) + ")")
        gp.append(f"set output '../{png}'")
        gp.append(f"set title '{title}: allreduce busbw (median of runs, bars: min-max)'")
        gp.append("set xlabel 'bytes per rank'")
        gp.append("set ylabel 'busbw (GB/s)'")
        gp.append("plot " + ", \\\n     ".join(plots))
    rec = summary["recovery"]
    if rec:
        f = "recovery.dat"
        series = [
            ("ringmend", "detect", "ringmend: detect"),
            ("ringmend", "shrink", "ringmend: revoke+shrink"),
            ("ringmend", "rebuild", "ringmend: rebuild (plan, shared memory, endpoints, agree)"),
            ("ringmend", "recovery", "ringmend: agree+shrink+rebuild"),
            ("ringmend", "first", "ringmend: death -> first collective"),
            ("ulfm", "shrink", "ULFM: MPIX_Comm_shrink alone"),
            ("ulfm", "first", "ULFM: death -> first MPI_Allreduce"),
            ("restart", "wall", "restart: mpirun with N-1 ranks"),
        ]
        with open(os.path.join(pdir, f), "w") as o:
            o.write("# ranks " + " ".join(f"{a}_{b}_median {a}_{b}_min {a}_{b}_max" for a, b, _ in series) + "\n")
            for n, e in rec.items():
                cols = [str(n)]
                for a, b, _ in series:
                    s = e[a].get(b)
                    cols += [f"{s['median']:.6g}", f"{s['min']:.6g}", f"{s['max']:.6g}"] if s else ["NaN"] * 3
                o.write(" ".join(cols) + "\n")
        png = "recovery.png"
        pngs.append(png)
        gp.append("unset logscale x")
        gp.append("set xtics (" + ", ".join(str(n) for n in rec) + ") format '%g'")
        gp.append(f"set xrange [{min(rec) - 0.5}:{max(rec) + 0.5}]")
        gp.append("set key below maxrows 3 box")
        gp.append("set size ratio 0")
        gp.append(f"set output '../{png}'")
        gp.append("set title 'Recovery after one SIGKILLed rank (median of rounds, bars: min-max)'")
        gp.append("set xlabel 'ranks before the failure'")
        gp.append("set ylabel 'milliseconds'")
        plots = []
        for i, (_, _, title) in enumerate(series):
            c = 2 + 3 * i
            color = ["#9467bd", "#17becf", "#1f77b4", "#2ca02c", "#8c564b", "#ff7f0e", "#d62728", "#000000"][i]
            plots.append(
                f"'{f}' using 1:{c}:{c + 1}:{c + 2} with yerrorlines lc rgb '{color}' pt {5 + i} ps 0.8 title '{title}'"
            )
        gp.append("plot " + ", \\\n     ".join(plots))
    with open(os.path.join(pdir, "plots.gp"), "w") as o:
        o.write("\n".join(gp) + "\n")
    if not pngs:
        return [], None
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        return [], "gnuplot not found (Debian: gnuplot-nox; scripts/bootstrap.sh --with-cluster-tools): no PNGs"
    terms = run_text([gnuplot, "-e", "set terminal"]) or ""
    if "pngcairo" not in terms:
        text = read_text(os.path.join(pdir, "plots.gp")).replace("set terminal pngcairo", "set terminal png")
        with open(os.path.join(pdir, "plots.gp"), "w") as o:
            o.write(text)
    res = subprocess.run([gnuplot, "plots.gp"], cwd=pdir, capture_output=True, text=True)
    if res.returncode != 0:
        return [], "gnuplot failed: " + res.stderr.strip()[-500:]
    return [p for p in pngs if os.path.exists(os.path.join(d, p))], None


def report(d):
    try:
        with open(os.path.join(d, "machine.json"), encoding="utf-8") as f:
            mach = json.load(f)
    except (OSError, ValueError):
        mach = {}
    runs = load_runs(d)
    thr, bound, p2p, wrong, gloo_version = throughput(runs)
    rec = recovery(runs)
    failures = [
        f"{r['config']} {r['bench']} run {r['rep']} ({r['ranks']} ranks): "
        + ("no readable result" if r["status"] == -1 else f"exit status {r['status']}")
        + f", log `{r['log']}`"
        for r in runs
        if r["status"] != 0
    ]
    skipped = {}
    for line in read_text(os.path.join(d, "skipped.txt")).splitlines():
        if "\t" in line:
            cfg, why = line.split("\t", 1)
            skipped[cfg] = why
    params = {}
    for r in runs:
        if r["part"] == "recovery" and r["bench"] == "ringmend" and r["data"]:
            p = r["data"]["parameters"]
            params = {"size": p["size"], "size_text": human_size(p["size"]), "phase": p["phase"],
                      "settle": p["settle"]}
    reps = sorted({r["rep"] for r in runs if r["part"] == "throughput"})
    rounds = sorted({r["rep"] for r in runs if r["part"] == "recovery"})
    params["rounds"] = len(rounds)
    summary = {
        "machine": mach,
        "method": (
            f"Each throughput figure is the median of {len(reps)} run(s) of one invocation, with the slowest and "
            "fastest run in brackets (busbw from the median of the runs' average latencies; bars in the plots: "
            "the slowest and fastest run); warm-up calls are excluded; "
            "the first run of every allreduce program validates its results (`-c`). Definitions: bench/README.md."
        ),
        "recovery_method": (
            "One job per round: N ranks start, settle, and one rank (the middle one) SIGKILLs itself in the "
            f"{params.get('phase', '?')} phase of an allreduce; a phase's figure in a round is the largest over "
            "the survivors. detect: death → the survivor starts recovering (callback time − "
            "MembershipChange::recovery_seconds − death); revoke+shrink and rebuild: MembershipChange::shrink_seconds and "
            "rebuild_seconds, the two parts of agree+shrink+rebuild (recovery_seconds); re-execution: "
            "callback → the interrupted allreduce returns; death → first collective: the interrupted allreduce "
            "completes on the survivors. ULFM columns: the same job in plain MPI (MPIX_Comm_revoke, "
            "MPIX_Comm_shrink, an MPI_Allgather of 512 bytes per rank and MPIX_Comm_agree timed each; the last two are the "
            "synchronisations a rebuild makes, its floor). Restart: wall time of `mpirun -np N−1` running "
            "MPI_Init, the ringmend Runtime start, one allreduce and shutdown — a lower bound of a restart, "
            "which would also wait for the job to be torn down and reload its state."
        ),
        "allreduce": thr,
        "bound": bound,
        "p2p_bw": p2p["p2p_bw"],
        "p2p_bibw": p2p["p2p_bibw"],
        "p2p_latency": p2p["p2p_latency"],
        "validation": wrong,
        "gloo_version": gloo_version,
        "recovery_parameters": params,
        "recovery": rec,
        "failures": failures,
        "skipped": skipped,
        "plots": [],
    }
    pngs, problem = write_plots(d, summary)
    summary["plots"] = pngs
    if problem:
        summary["plot_problem"] = problem
        print("report: " + problem, file=sys.stderr)
    with open(os.path.join(d, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    write_table(d, mach, summary)
    bad_validation = any(v["wrong"] for c in wrong.values() for v in c.values()) or any(
        e["wrong"] for e in rec.values()
    )
    print(f"report: {os.path.join(d, 'table.md')}, {os.path.join(d, 'summary.json')}"
          + (", " + ", ".join(os.path.join(d, p) for p in pngs) if pngs else ""))
    if bad_validation:
        print("report: WRONG RESULTS were reported; see table.md", file=sys.stderr)
    return 1 if (failures or bad_validation) else 0


# ------------------------------------------------------------------ README

README_BEGIN = "<!-- speed: generated from bench/results/published by bench/bench_report.py readme; do not edit -->"
README_END = "<!-- /speed -->"
# The rows of the README's speed table: (config, size), where measured.
README_BUSBW = [
    ("one_node", 1 << 20),
    ("one_node", 16 << 20),
    ("one_node", 64 << 20),
    ("one_node_4", 1 << 20),
    ("cluster_1ppn", 4 << 20),
    ("cluster_1ppn", 64 << 20),
    ("cluster_2ppn", 1 << 20),
    ("cluster_2ppn", 16 << 20),
]
README_PLACES = {
    "one_node": "one node, 2 ranks",
    "one_node_4": "one node, 4 ranks",
    "cluster_1ppn": "two nodes × 1 rank",
    "cluster_2ppn": "two nodes × 2 ranks",
}


def readme_block(summary):
    """The README's speed section, from a published summary.json."""
    mach = summary.get("machine", {})
    thr = summary.get("allreduce", {})
    names = dict(IMPLS)
    cols = [k for k in MPI_BASELINES if any(k in thr.get(cfg, {}) for cfg in thr)]
    L = [README_BEGIN]
    virt = ", a VM" if mach.get("virtual_machine") else ""
    L.append(
        f"The figures here come from one invocation of `{mach.get('command', '?')}` at commit "
        f"`{mach.get('git_commit', '?')[:12]}`{' (with local changes)' if mach.get('git_modified') else ''} on "
        f"{mach.get('date', '?')[:10]}, on a {mach.get('cpus', '?')}-CPU {mach.get('cpu_model', '?')} "
        f"({mach.get('os', '?')}{virt}; {mach.get('mpirun_version', '?')} with ULFM, UCX "
        f"{mach.get('ucx_version', '?')}): median [slowest–fastest] of the runs, warm-up excluded, results "
        "validated. **Open MPI FT** is Open MPI in the fault-tolerant configuration ringmend needs; **Open MPI "
        "default** and **MPICH** run MPI_Allreduce alone in their default configurations (what a user who gives "
        "up fault tolerance would run); **best MPI** is the best of these at that size. Full table, machine and "
        "command: [bench/results/published/table.md](bench/results/published/table.md)."
    )
    L.append("")

    def cell(cfg, impl, size, key):
        rows = {r["size"]: r for r in thr.get(cfg, {}).get(impl, [])}
        return spread(rows.get(size), key) if size in rows else "–"

    def best_ratio(cfg, size, key):
        by = {k: {r["size"]: r for r in thr[cfg][k]} for k in thr.get(cfg, {})}
        v, who = best_baseline(by, size, key)
        mine = by.get("ringmend", {}).get(size, {}).get(key)
        r = ratio(mine, v) if mine is not None and v else None
        return f"{sig(r)} ({names[who]})" if r is not None else "–"

    head = ["busbw (GB/s), float sum", "ringmend"] + [names[k] for k in cols] + ["ringmend / best MPI", "bound"]
    L.append("| " + " | ".join(head) + " |")
    L.append("|" + "---|" * len(head))
    bb = {}
    for cfg, size in README_BUSBW:
        if size not in {r["size"] for r in thr.get(cfg, {}).get("ringmend", [])}:
            continue
        bound = {r["size"]: r["busbw_GBps"] for r in summary.get("bound", {}).get(cfg, [])}
        if cfg not in bb:
            bb[cfg] = network_p2p(summary, "p2p_bibw", cfg).get("ringmend", {})
        if size in bound:
            b = f"{sig(bound[size])} (memory bound)"
        elif size in bb[cfg]:
            b = f"{sig(bb[cfg][size]['bandwidth_MBps'] / 2 / 1e3)} (bidirectional p2p per direction)"
        else:
            b = "–"
        row = [f"{README_PLACES[cfg]}, {human_size(size)}", cell(cfg, "ringmend", size, "busbw_GBps")]
        row += [cell(cfg, k, size, "busbw_GBps") for k in cols]
        row += [best_ratio(cfg, size, "busbw_GBps"), b]
        L.append("| " + " | ".join(row) + " |")
    L.append("")
    head = ["latency (µs), 4 bytes", "ringmend"] + [names[k] for k in cols] + ["ringmend / best MPI"]
    L.append("| " + " | ".join(head) + " |")
    L.append("|" + "---|" * len(head))
    for cfg in README_PLACES:
        if 4 not in {r["size"] for r in thr.get(cfg, {}).get("ringmend", [])}:
            continue
        row = [README_PLACES[cfg], cell(cfg, "ringmend", 4, "avg_latency_us")]
        row += [cell(cfg, k, 4, "avg_latency_us") for k in cols]
        row.append(best_ratio(cfg, 4, "avg_latency_us"))
        L.append("| " + " | ".join(row) + " |")
    L.append("")
    rec = summary.get("recovery", {})
    if rec:
        ns = sorted(rec, key=int)
        pick = [ns[0], ns[-1]] if len(ns) > 1 else ns

        def med(n, who, phase):
            v = rec[n].get(who, {}).get(phase)
            return sig(v["median"]) if v else "?"

        L.append(
            f"Recovery from a SIGKILLed rank (one node, {' / '.join(pick)} ranks): "
            f"{' / '.join(med(n, 'ringmend', 'first') for n in pick)} ms from the death to the completed "
            f"re-executed allreduce (median), against {' / '.join(med(n, 'restart', 'wall') for n in pick)} ms "
            "for merely starting a job with one rank fewer."
        )
        L.append("")
    L.append(README_END)
    return "\n".join(L)


def readme(d, path, check):
    """Writes the speed section of README `path` from DIR/summary.json; with
    check, only says whether the README holds what DIR's data gives."""
    with open(os.path.join(d, "summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    text = read_text(path)
    if README_BEGIN not in text or README_END not in text:
        print(f"readme: {path} has no generated speed section ({README_BEGIN} ... {README_END})", file=sys.stderr)
        return 1
    head, rest = text.split(README_BEGIN, 1)
    tail = rest.split(README_END, 1)[1]
    new = head + readme_block(summary) + tail
    if check:
        if new != text:
            print(f"readme: the speed section of {path} is not what {d}/summary.json gives: "
                  "run bench/bench_report.py readme " + d + " " + path, file=sys.stderr)
            return 1
        print(f"readme: the speed section of {path} matches {d}/summary.json")
        return 0
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)
    print(f"readme: wrote the speed section of {path} from {d}/summary.json")
    return 0


# ------------------------------------------------------------------ check

# The result files' schema (bench/README.md, "JSON files"): the keys every
# file of a kind has, with their types. A program may write more.
NUM = (int, float)
INT_OR_NULL = (int, None)
NUM_OR_NULL = (int, float, None)
RUN_KEYS = {"program": str, "date": str, "hostname": str, "ranks": int, "mpi_library_version": str}
ALLREDUCE_ROW = {
    "size": int, "count": int, "type": str, "op": str, "impl": str, "avg_latency_us": NUM,
    "min_latency_us": NUM, "max_latency_us": NUM, "algbw_GBps": NUM, "busbw_GBps": NUM, "wrong": INT_OR_NULL,
    "iterations": int, "warmup": int,
}
SWEEP_PARAMETERS = {"min_bytes": int, "max_bytes": int}
COLLECTIVE_PARAMETERS = dict(SWEEP_PARAMETERS, iterations=INT_OR_NULL, warmup=INT_OR_NULL, type=str, op=str,
                             busbw_factor=NUM)
P2P_PARAMETERS = dict(SWEEP_PARAMETERS, impl=str, transport=(str, None), measured_ranks=list, same_node=bool)
P2P_ROW = {"size": int, "impl": str, "transport": str, "iterations": int, "warmup": int}
RECOVERY_ROW = {"round": int, "mode": str, "victim_world_rank": int, "ranks_before": int, "ranks_after": int,
                "death_time_known": bool, "wrong": int, "ok": bool}
SCHEMA = {  # benchmark -> (parameters, row)
    "allreduce": (dict(COLLECTIVE_PARAMETERS, impl=str, validate=bool), ALLREDUCE_ROW),
    "gloo_allreduce": (dict(COLLECTIVE_PARAMETERS, algorithm=str, transport=str, listen=str), ALLREDUCE_ROW),
    "p2p_bw": (dict(P2P_PARAMETERS, window=int), dict(P2P_ROW, bandwidth_MBps=NUM, window=int)),
    "p2p_bibw": (dict(P2P_PARAMETERS, window=int), dict(P2P_ROW, bandwidth_MBps=NUM, window=int)),
    "p2p_latency": (P2P_PARAMETERS, dict(P2P_ROW, latency_us=NUM)),
    "recovery": (
        {"mode": str, "rounds": int, "size": int, "type": str, "op": str, "settle": int, "victim_policy": str,
         "spares": int, "state_bytes": int, "record_file": str},
        RECOVERY_ROW,
    ),
    "startup": (
        {"mode": str, "size": int, "type": str},
        {"ranks": int, "mpi_init_ms": NUM, "runtime_start_ms": NUM, "first_allreduce_ms": NUM,
         "finalize_ms": NUM, "in_process_ms": NUM},
    ),
}


def fits(value, kinds):
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if value is None:
        return None in kinds
    if isinstance(value, bool):  # a bool is an int to Python, not to JSON
        return bool in kinds
    return any(k is not None and isinstance(value, k) for k in kinds)


def schema_problems(data):
    """What in a result file's document does not follow the schema ([] when all does)."""
    if not isinstance(data, dict):
        return ["not a JSON object"]
    kind = data.get("benchmark")
    if kind not in SCHEMA:
        return [f"benchmark {kind!r} is none of {', '.join(SCHEMA)}"]
    parameters, row = SCHEMA[kind]
    if kind == "recovery":
        phases = ULFM_PHASES if (data.get("parameters") or {}).get("mode") == "ulfm" else RINGMEND_PHASES
        row = dict(row, **{p + "_ms": NUM_OR_NULL for p in phases})
    problems = []

    def need(obj, keys, where):
        if not isinstance(obj, dict):
            problems.append(f"{where} is not an object")
            return
        for key, kinds in keys.items():
            if key not in obj:
                problems.append(f"{where} has no {key!r}")
            elif not fits(obj[key], kinds):
                problems.append(f"{where}[{key!r}] = {obj[key]!r} is not of the schema's type")

    need(data.get("run"), RUN_KEYS, "run")
    need(data.get("parameters"), parameters, "parameters")
    rows = data.get("rows")
    if not isinstance(rows, list):
        problems.append("rows is not an array")
        rows = []
    for i, r in enumerate(rows):
        need(r, row, f"rows[{i}]")
    if kind == "recovery" and not isinstance(data.get("summary"), dict):
        problems.append("a recovery file has no summary object")
    return problems


def check(paths):
    """Checks result files against the schema; 0 when every one follows it."""
    bad = 0
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            problems = schema_problems(data)
        except (OSError, ValueError) as e:
            problems = [str(e)]
        if problems:
            bad += 1
            print(f"check: {path}: " + "; ".join(problems), file=sys.stderr)
        else:
            print(f"check: {path}: {data['benchmark']}, {len(data['rows'])} row(s), as the schema says")
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "machine":
        opts = {"--command": "", "--mode": "full", "--mpirun": ""}
        i = 3
        while i + 1 < len(argv):
            opts[argv[i]] = argv[i + 1]
            i += 2
        machine(argv[2], opts["--command"], opts["--mode"], opts["--mpirun"])
        return 0
    if len(argv) == 3 and argv[1] == "loadavg":
        loadavg(argv[2])
        return 0
    if len(argv) >= 3 and argv[1] == "check":
        return check(argv[2:])
    if len(argv) == 3 and argv[1] == "report":
        return report(argv[2])
    if len(argv) in (4, 5) and argv[1] == "readme" and (len(argv) == 4 or argv[4] == "--check"):
        return readme(argv[2], argv[3], len(argv) == 5)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
