"""Benchmark of the pipeline's archive layout and report on generated history rows.

    .venv/bin/python bench/pipeline_bench.py                      # 1 and 5 million rows, local[*]
    .venv/bin/python bench/pipeline_bench.py --rows 200000 --master 'local[2]' --driver-memory 2g

For each size, in a fresh Python process (so that each size's peaks are its own):

1. archive layout: relq.pipeline.history generates the rows in Spark (spark.range and column
   expressions) and relq.pipeline.layout.write writes them as Parquet, partitioned by queue,
   type and day. Generation is lazy, so its cost is inside this step.
2. report: relq.pipeline.report.run on that archive: read, figures (exact percentiles),
   charts, report.json and report.html. The Spark session is already running.
3. DuckDB, the peer: bench/pipeline_duckdb.py computes the same figures from the same files
   on as many threads as Spark has cores, and they are compared with report.json (an
   independent oracle: a difference fails the run). The line shows Spark's time over DuckDB's.

It prints, per step, rows per second and the peak memory of the two processes that do the
work, each measured on its own:

- driver: this Python process's peak resident set (VmHWM in /proc/self/status);
- JVM: the Spark JVM PySpark starts as a child process (in local mode it is the driver and
  the executors), its peak resident set (VmHWM of that process): the heap it touched plus
  metaspace, thread stacks, code and off-heap buffers. Its heap limit is --driver-memory.

Both peaks are reset before each step (writing 5 to /proc/<pid>/clear_refs, Linux 4.0 and
later); where that is refused, a step's peak is the process's peak so far, and the table
says so. Each step also reports the CPU seconds its processes used (the JVM's, and Python's),
which other work on a shared machine changes much less than the elapsed time, the JVM's split
by its threads (compiling: HotSpot's JIT compilers; tasks: Spark's tasks; other: planning, GC,
shuffle and Py4J), and the load average after it. Linux only (/proc). Never part of the tests:
speed goals are measured, not asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # runnable as `python bench/pipeline_bench.py` from a checkout
    sys.path.insert(0, str(REPO))


# -- memory, from /proc --------------------------------------------------------------------------------------


def peak_kib(pid: int | str) -> int | None:
    """VmHWM (peak resident set) of a process in KiB, None if unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def reset_peak(pid: int | str) -> bool:
    """Set a process's VmHWM back to its current resident set; False where refused."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def cpu_seconds(pid: int | str) -> float | None:
    """User plus system CPU time of a process so far, in seconds (None if unreadable)."""
    try:
        return _stat_cpu(Path(f"/proc/{pid}/stat").read_text())
    except OSError:
        return None


def _stat_cpu(stat: str) -> float:
    """The CPU seconds (utime + stime) in a /proc/<pid>/stat or task/<tid>/stat line: after the
    name in parentheses, which may hold spaces and parentheses itself (proc(5))."""
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# The JVM's threads that compile (HotSpot's C1 and C2 compilers: "C1 CompilerThre", a name the
# kernel keeps 15 characters of) and that run Spark's tasks ("Executor task i" in PySpark 4.3).
_COMPILING = ("C1 CompilerThre", "C2 CompilerThre")
_TASKS = "Executor task"


def thread_cpu(pid: int | str, proc: Path = Path("/proc")) -> dict[str, float]:
    """CPU seconds (user + system) of a process's threads so far, added up per thread name."""
    found: dict[str, float] = {}
    try:
        threads = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return found
    for thread in threads:
        try:
            stat = (thread / "stat").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        found[name] = found.get(name, 0.0) + _stat_cpu(stat)
    return found


def jvm_cpu_split(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """The JVM's CPU seconds between two thread_cpu() readings: compiling (the JIT compilers),
    tasks (Spark's tasks) and other (the driver's planning, GC, shuffle, Py4J). A thread that
    ended between the readings is not counted."""
    split = {"compiling": 0.0, "tasks": 0.0, "other": 0.0}
    for name, seconds in after.items():
        used = seconds - before.get(name, 0.0)
        kind = "compiling" if name.startswith(_COMPILING) else "tasks" if name.startswith(_TASKS) else "other"
        split[kind] += max(used, 0.0)
    return split


def jvm_pid() -> int | None:
    """The Java process among this process's descendants (PySpark's gateway JVM)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    todo = list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "java":
                return pid
        except OSError:
            pass
        todo.extend(children.get(pid, []))
    return None


# -- one size, in its own process ----------------------------------------------------------------------------


def one(rows: int, master: str, workdir: Path, driver_memory: str | None) -> None:
    """Run both steps for ``rows`` rows; print one JSON line per step."""
    from relq.pipeline import history, layout, report
    from relq.pipeline.spark import session

    conf = {"spark.driver.memory": driver_memory} if driver_memory else {}
    started = time.perf_counter()
    spark = session(master, app="relq-pipeline-bench", **conf)
    spark.sparkContext.setLogLevel("ERROR")
    startup_s = time.perf_counter() - started
    jvm = jvm_pid()
    archive, out = workdir / f"archive-{rows}", workdir / f"report-{rows}"
    shutil.rmtree(archive, ignore_errors=True)

    def measure(step: str, work) -> float:
        resets = [reset_peak("self"), jvm is not None and reset_peak(jvm)]
        cpu = [cpu_seconds("self"), jvm and cpu_seconds(jvm)]
        threads = thread_cpu(jvm) if jvm else {}
        began = time.perf_counter()
        work()
        seconds = time.perf_counter() - began
        load = os.getloadavg()[0]
        print(json.dumps({
            "rows": rows, "step": step, "seconds": seconds, "rows_per_s": rows / seconds,
            "driver_peak_mib": (peak_kib("self") or 0) / 1024,
            "jvm_peak_mib": None if jvm is None else (peak_kib(jvm) or 0) / 1024,
            "python_cpu_s": (cpu_seconds("self") or 0) - (cpu[0] or 0),
            "jvm_cpu_s": None if jvm is None else (cpu_seconds(jvm) or 0) - (cpu[1] or 0),
            "jvm_cpu_split_s": None if jvm is None else jvm_cpu_split(threads, thread_cpu(jvm)),
            "peaks_reset": all(resets), "spark_start_s": startup_s, "load_1min_after": load,
            "master": spark.sparkContext.master, "cores": spark.sparkContext.defaultParallelism,
            "jvm_heap_max_mib": spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory() / 2**20,
        }), flush=True)
        return seconds

    measure("archive layout (generate + layout.write)",
            lambda: layout.write(history.generate(spark, rows), str(archive), mode="overwrite"))
    spark_s = measure("report (read, figures, charts, files)",
                      lambda: report.run(str(archive), out, spark=spark, console=_quiet()))
    cores = spark.sparkContext.defaultParallelism
    spark.stop()
    peer(rows, archive, out, cores, spark_s)


def peer(rows: int, archive: Path, out: Path, threads: int, spark_s: float) -> None:
    """DuckDB on the same files: its time for the figures alone (no charts, no files), and
    whether they are the report's (one JSON line; a difference is an error)."""
    from bench.pipeline_duckdb import differences, figures

    cpu = cpu_seconds("self")
    began = time.perf_counter()
    duck = figures(str(archive), threads)
    seconds = time.perf_counter() - began
    found = differences(json.loads((out / "report.json").read_text(encoding="utf-8"))["figures"], duck)
    print(json.dumps({"rows": rows, "step": "DuckDB (the same figures)", "seconds": seconds,
                      "rows_per_s": rows / seconds, "threads": threads,
                      "spark_over_duckdb": spark_s / seconds,
                      "python_cpu_s": (cpu_seconds("self") or 0) - (cpu or 0), "driver_peak_mib": None,
                      "same_figures": not found, "differences": found,
                      "load_1min_after": os.getloadavg()[0]}), flush=True)


def _quiet():
    from rich.console import Console

    return Console(file=open(os.devnull, "w"))  # lives as long as the run


# -- the driver of the runs ----------------------------------------------------------------------------------


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        memory = int(Path("/proc/meminfo").read_text().split()[1]) / 2**20
    except (OSError, ValueError, IndexError):
        memory = float("nan")
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr
    import pyspark

    return (f"{cpu}, {os.cpu_count()} cores, {memory:.1f} GiB RAM, {platform.system()} "
            f"{platform.release()}, Python {platform.python_version()}, PySpark {pyspark.__version__}, "
            f"{java.splitlines()[0] if java else 'java ?'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--driver-memory", default=None,
                        help="the JVM's heap (spark.driver.memory; Spark's default is 1g)")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where the archives go (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the archives and reports")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.one is not None:
        one(args.one, args.master, args.workdir, args.driver_memory)
        return 0

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="relq-pipeline-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}", flush=True)
    print(f"master {args.master}, driver memory {args.driver_memory or 'Spark default (1g)'}, "
          f"work in {workdir}", flush=True)
    results = []
    try:
        for rows in args.rows:
            command = [sys.executable, __file__, "--one", str(rows), "--master", args.master,
                       "--workdir", str(workdir)]
            if args.driver_memory:
                command += ["--driver-memory", args.driver_memory]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
            results += lines
            if done.returncode:
                print(f"{rows:,} rows failed (exit {done.returncode}):\n{done.stderr[-3000:]}",
                      file=sys.stderr)
                return 1
            for r in lines:
                print(_line(r), flush=True)
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    if any(r.get("same_figures") is False for r in results):
        print("the report's figures differ from DuckDB's (above)", file=sys.stderr)
        return 1
    if results and not all(r.get("peaks_reset", True) for r in results):
        print("note: peaks could not be reset between steps: a step's peak is its process's peak so far")
    return 0


def _line(r: dict) -> str:
    if "spark_over_duckdb" in r:
        same = "same figures as the report" if r["same_figures"] else "DIFFERENT FIGURES: " + "; ".join(
            r["differences"][:5])
        return (f"{r['rows']:>10,} rows  {r['step']:<42} {r['seconds']:8.2f} s  "
                f"{r['rows_per_s']:>10,.0f} rows/s  "
                f"(Spark/DuckDB {r['spark_over_duckdb']:.1f}x; {r['threads']} threads; {same}; "
                f"load average after {r['load_1min_after']:.1f})")
    jvm = "?" if r["jvm_peak_mib"] is None else f"{r['jvm_peak_mib']:,.0f}"
    jvm_cpu = "?" if r["jvm_cpu_s"] is None else f"{r['jvm_cpu_s']:.1f}"
    split = r.get("jvm_cpu_split_s")
    if split:
        jvm_cpu += (f" (compiling {split['compiling']:.1f}, tasks {split['tasks']:.1f}, "
                    f"other {split['other']:.1f})")
    return (f"{r['rows']:>10,} rows  {r['step']:<42} {r['seconds']:8.2f} s  "
            f"{r['rows_per_s']:>10,.0f} rows/s  "
            f"peak RSS: driver (Python) {r['driver_peak_mib']:,.0f} MiB, JVM {jvm} MiB "
            f"(heap max {r['jvm_heap_max_mib']:,.0f} MiB); CPU s: JVM {jvm_cpu}, "
            f"Python {r['python_cpu_s']:.1f} "
            f"({r['master']}, {r['cores']} cores; Spark start {r['spark_start_s']:.1f} s; "
            f"load average after {r['load_1min_after']:.1f})")


if __name__ == "__main__":
    sys.exit(main())
