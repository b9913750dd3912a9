"""Benchmark of the pipeline's archive layout and report on generated history rows, the report
run cold (the command line's way: a JVM of its own) and on a warm Spark Connect server, beside
DuckDB on the same files.

    .venv/bin/python bench/pipeline_bench.py --rows 1000000 5000000 20000000 --master 'local[2]'
    .venv/bin/python bench/pipeline_bench.py --rows 200000 --master 'local[2]' --driver-memory 2g --no-warm

For each size, each step in a fresh Python process (so that each step's peaks are its own):

1. archive layout: relq.pipeline.history generates the rows in Spark (spark.range and column
   expressions) and relq.pipeline.layout.write writes them as Parquet, partitioned by queue,
   type and day. Generation is lazy, so its cost is inside this step.
2. report, cold: a new Spark session (its JVM's start is timed apart, not in the step), then
   relq.pipeline.report.run on that archive: read, figures (exact percentiles), charts,
   report.json and report.html. This is `invoke pipeline.report` less the JVM's start.
3. report, warm: a Spark Connect server (the PySpark wheel's sbin/start-connect-server.sh on the
   same master, started once for every size, on loopback) runs one report of the archive that is
   not timed, then --runs reports that are; the median is compared. Its CPU is the server JVM's.
4. DuckDB, the peer: bench/pipeline_duckdb.py computes the same figures from the same files
   on as many threads as Spark has cores, --runs times (the median is compared), and they are
   compared with both reports' report.json (an independent oracle: a difference fails the run).

It prints, per step, rows per second and the peak memory of the processes that do the work,
each measured on its own:

- driver: the step's Python process's peak resident set (VmHWM in /proc/self/status);
- JVM: the Spark JVM PySpark starts as a child process (in local mode it is the driver and
  the executors), or the Spark Connect server's, its peak resident set (VmHWM of that
  process): the heap it touched plus metaspace, thread stacks, code and off-heap buffers. Its
  heap limit is --driver-memory.

Peaks are reset before each step (writing 5 to /proc/<pid>/clear_refs, Linux 4.0 and later);
where that is refused, a step's peak is the process's peak so far, and the table says so. Each
step also reports the CPU seconds its processes used (the JVM's, and Python's), which other work
on a shared machine changes much less than the elapsed time, the JVM's split by its threads
(compiling: HotSpot's JIT compilers; tasks: Spark's tasks; other: planning, GC, shuffle, Py4J
and gRPC), and the load average after it. At the end, a table per size: the cold and the warm
report over DuckDB, against the goals (warm at most 2x, cold at most 4x). Linux only (/proc).
Never part of the tests: speed goals are measured, not asserted.
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


def jvm_pid(root: int | None = None) -> int | None:
    """The Java process among the descendants of ``root`` (default: this process; PySpark's
    gateway JVM, or a Spark Connect server's JVM under its launcher)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    todo = list(children.get(os.getpid() if root is None else root, []))
    while todo:
        pid = todo.pop()
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "java":
                return pid
        except OSError:
            pass
        todo.extend(children.get(pid, []))
    return None


class Measure:
    """A step's time, CPU (Python's, the JVM's by thread) and peaks, printed as one JSON line."""

    def __init__(self, rows: int, jvm: int | None, **fixed: object) -> None:
        self.rows, self.jvm, self.fixed = rows, jvm, fixed

    def __call__(self, step: str, work, **more: object) -> float:
        resets = [reset_peak("self"), self.jvm is not None and reset_peak(self.jvm)]
        cpu = [cpu_seconds("self"), self.jvm and cpu_seconds(self.jvm)]
        threads = thread_cpu(self.jvm) if self.jvm else {}
        began = time.perf_counter()
        work()
        seconds = time.perf_counter() - began
        jvm = self.jvm
        print(json.dumps({
            "rows": self.rows, "step": step, "seconds": seconds, "rows_per_s": self.rows / seconds,
            "driver_peak_mib": (peak_kib("self") or 0) / 1024,
            "jvm_peak_mib": None if jvm is None else (peak_kib(jvm) or 0) / 1024,
            "python_cpu_s": (cpu_seconds("self") or 0) - (cpu[0] or 0),
            "jvm_cpu_s": None if jvm is None else (cpu_seconds(jvm) or 0) - (cpu[1] or 0),
            "jvm_cpu_split_s": None if jvm is None else jvm_cpu_split(threads, thread_cpu(jvm)),
            "peaks_reset": all(resets), "load_1min_after": os.getloadavg()[0], **self.fixed, **more,
        }), flush=True)
        return seconds


def _session_facts(spark, started_s: float | None) -> dict[str, object]:
    from relq.pipeline.spark import cores

    return {"master": spark.conf.get("spark.master", None), "cores": cores(spark), "spark_start_s": started_s}


# -- the steps, each in its own process ----------------------------------------------------------------------


def write_step(rows: int, master: str, workdir: Path, driver_memory: str | None) -> None:
    """Generate and write the archive of ``rows`` rows (replacing one there)."""
    from relq.pipeline import history, layout
    from relq.pipeline.spark import session

    started = time.perf_counter()
    spark = session(master, app="relq-pipeline-bench", **_memory(driver_memory))
    started_s = time.perf_counter() - started
    archive = workdir / f"archive-{rows}"
    shutil.rmtree(archive, ignore_errors=True)
    measure = Measure(rows, jvm_pid(), **_session_facts(spark, started_s))
    measure("archive layout (generate + layout.write)",
            lambda: layout.write(history.generate(spark, rows), str(archive), mode="overwrite"))
    spark.stop()


def cold_step(rows: int, master: str, workdir: Path, driver_memory: str | None) -> None:
    """The report in a JVM that has run nothing before: the command line's path, its start apart."""
    from relq.pipeline import report
    from relq.pipeline.spark import session

    started = time.perf_counter()
    spark = session(master, app="relq-pipeline-bench", **_memory(driver_memory))
    started_s = time.perf_counter() - started
    measure = Measure(rows, jvm_pid(), **_session_facts(spark, started_s), kind="cold")
    measure("report, cold (read, figures, charts, files)",
            lambda: report.run(str(workdir / f"archive-{rows}"), workdir / f"report-cold-{rows}", spark=spark,
                               console=_quiet()))
    spark.stop()


def warm_step(rows: int, remote: str, server: int | None, workdir: Path, runs: int) -> None:
    """The report on the warm Spark Connect server: one run untimed, then ``runs`` timed."""
    from relq.pipeline import report
    from relq.pipeline.spark import session

    started = time.perf_counter()
    spark = session(remote=remote)
    started_s = time.perf_counter() - started
    archive, out = str(workdir / f"archive-{rows}"), workdir / f"report-warm-{rows}"
    facts = _session_facts(spark, started_s)
    measure = Measure(rows, server, **facts, kind="warm")
    measure("report, warm server: the untimed first run",
            lambda: report.run(archive, out, spark=spark, remote=remote, console=_quiet()), untimed=True)
    for run in range(1, runs + 1):
        measure(f"report, warm server (run {run} of {runs})",
                lambda: report.run(archive, out, spark=spark, remote=remote, console=_quiet()))
    spark.stop()


def peer_step(rows: int, workdir: Path, threads: int, runs: int) -> None:
    """DuckDB on the same files, ``runs`` times: its time for the figures alone (no charts, no
    files), and whether they are the reports' (one JSON line a run; a difference is an error)."""
    from bench.pipeline_duckdb import differences, figures

    archive = str(workdir / f"archive-{rows}")
    reports = [workdir / f"report-{kind}-{rows}" / "report.json" for kind in ("cold", "warm")]
    for run in range(1, runs + 1):
        cpu = cpu_seconds("self")
        began = time.perf_counter()
        duck = figures(archive, threads)
        seconds = time.perf_counter() - began
        found = [line for path in reports if path.exists()
                 for line in differences(json.loads(path.read_text(encoding="utf-8"))["figures"], duck)]
        step = f"DuckDB, the same figures (run {run} of {runs})"
        print(json.dumps({"rows": rows, "step": step, "seconds": seconds,
                          "rows_per_s": rows / seconds, "threads": threads, "kind": "duckdb",
                          "python_cpu_s": (cpu_seconds("self") or 0) - (cpu or 0),
                          "compared": [str(p.parent.name) for p in reports if p.exists()],
                          "same_figures": not found, "differences": found[:20],
                          "load_1min_after": os.getloadavg()[0]}), flush=True)


def _memory(driver_memory: str | None) -> dict[str, str]:
    return {"spark.driver.memory": driver_memory} if driver_memory else {}


def _quiet():
    from rich.console import Console

    return Console(file=open(os.devnull, "w"))  # lives as long as the run


# -- the Spark Connect server --------------------------------------------------------------------------------


class ConnectServer:
    """The PySpark wheel's Spark Connect server (sbin/start-connect-server.sh, in the foreground,
    a process group of its own) on ``master``, its gRPC port on loopback, no web UI, its files
    in ``folder``; stopped with its whole group."""

    def __init__(self, master: str, driver_memory: str | None, folder: Path) -> None:
        import socket

        import pyspark

        from relq.pipeline.spark import find_java

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        home = Path(pyspark.__file__).resolve().parent
        for sub in ("logs", "local", "conf"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        java = find_java()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SPARK_", "PYSPARK_")) and k != "JAVA_HOME"}
        env.update({"SPARK_HOME": str(home), "SPARK_CONF_DIR": str(folder / "conf"),
                    "SPARK_LOG_DIR": str(folder / "logs"), "SPARK_PID_DIR": str(folder / "logs"),
                    "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_DIRS": str(folder / "local"),
                    "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(REPO)})
        if java.home:
            env["JAVA_HOME"] = java.home
        command = [str(home / "sbin" / "start-connect-server.sh"), "--wait", "--master", master,
                   "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
                   "--conf", f"spark.connect.grpc.binding.port={self.port}",
                   "--conf", "spark.ui.enabled=false",
                   "--conf", f"spark.local.dir={folder / 'local'}"]
        command += ["--driver-memory", driver_memory] if driver_memory else []
        self.log = folder / "logs" / "console.log"
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out,
                                            stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.url = f"sc://127.0.0.1:{self.port}"
        self.began = time.perf_counter()

    def wait(self, timeout: float = 300) -> float:
        """Until the server accepts connections; how long it took to start."""
        import socket

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = self.log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"the Spark Connect server ended:\n{tail}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return time.perf_counter() - self.began
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"the Spark Connect server did not start in {timeout:.0f} s")

    def jvm(self) -> int | None:
        return jvm_pid(self.process.pid)

    def stop(self) -> None:
        import signal

        for number, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 30)):
            try:
                os.killpg(self.process.pid, number)
            except ProcessLookupError:
                break
            try:
                self.process.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue


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
    from relq.pipeline.spark import find_java, java_major

    java = find_java()
    major = java_major(Path(java.home or "") / "bin" / "java") if java.home else None
    import duckdb
    import pyspark

    return (f"{cpu}, {os.cpu_count()} cores, {memory:.1f} GiB RAM, {platform.system()} "
            f"{platform.release()}, Python {platform.python_version()}, PySpark {pyspark.__version__}, "
            f"{java.where if major is None else f'Java {major} ({java.where})'}, DuckDB {duckdb.__version__}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument("--master", default="local[*]",
                        help="the Spark master of every step (and the server's)")
    parser.add_argument("--driver-memory", default=None,
                        help="the JVM's heap (spark.driver.memory; Spark's default is 1g), the server's too")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of the warm report and of DuckDB")
    parser.add_argument("--no-warm", dest="warm", action="store_false",
                        help="no Spark Connect server: the cold report and DuckDB only")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where the archives go (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the archives and reports")
    parser.add_argument("--step", choices=("write", "cold", "warm", "peer"), help=argparse.SUPPRESS)
    parser.add_argument("--remote", help=argparse.SUPPRESS)
    parser.add_argument("--server-pid", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.step:
        rows = args.rows[0]
        if args.step == "write":
            write_step(rows, args.master, args.workdir, args.driver_memory)
        elif args.step == "cold":
            cold_step(rows, args.master, args.workdir, args.driver_memory)
        elif args.step == "warm":
            warm_step(rows, args.remote, args.server_pid, args.workdir, args.runs)
        else:
            peer_step(rows, args.workdir, args.threads, args.runs)
        return 0

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="relq-pipeline-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}", flush=True)
    print(f"master {args.master}, driver memory {args.driver_memory or 'Spark default (1g)'}, "
          f"work in {workdir}", flush=True)
    server = ConnectServer(args.master, args.driver_memory, workdir / "connect-server") if args.warm else None
    results: list[dict] = []
    try:
        if server:
            print(f"Spark Connect server {server.url} started in {server.wait():.1f} s", flush=True)
        for rows in args.rows:
            common = [sys.executable, __file__, "--rows", str(rows), "--master", args.master,
                      "--workdir", str(workdir), "--runs", str(args.runs)]
            common += ["--driver-memory", args.driver_memory] if args.driver_memory else []
            steps = [["--step", "write"], ["--step", "cold"]]
            if server:
                steps.append(["--step", "warm", "--remote", server.url,
                              "--server-pid", str(server.jvm() or 0)])
            for step in steps:
                lines = _run([*common, *step], rows)
                if lines is None:
                    return 1
                results += lines
            cores = next(r["cores"] for r in results if r["rows"] == rows and r.get("kind") == "cold")
            lines = _run([*common, "--step", "peer", "--threads", str(cores)], rows)
            if lines is None:
                return 1
            results += lines
    finally:
        if server:
            server.stop()
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(_summary(results), flush=True)
    if any(r.get("same_figures") is False for r in results):
        print("the report's figures differ from DuckDB's (above)", file=sys.stderr)
        return 1
    if results and not all(r.get("peaks_reset", True) for r in results):
        print("note: peaks could not be reset between steps: a step's peak is its process's peak so far")
    return 0


def _run(command: list[str], rows: int) -> list[dict] | None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    for r in lines:
        print(_line(r), flush=True)
    if done.returncode:
        print(f"{rows:,} rows failed (exit {done.returncode}):\n{done.stderr[-3000:]}", file=sys.stderr)
        return None
    return lines


GOALS = {"warm": 2.0, "cold": 4.0}  # the report's time over DuckDB's, at most


def _summary(results: list[dict]) -> str:
    """Per size: the cold report, the warm report's median, DuckDB's median, and the ratios."""
    import statistics

    lines = ["", f"{'rows':>12}  {'cold report':>12}  {'warm report':>12}  {'DuckDB':>8}  "
                 f"{'cold/DuckDB':>12}  {'warm/DuckDB':>12}"]
    def median(of: list[dict], kind: str) -> float | None:
        times = [r["seconds"] for r in of if r.get("kind") == kind and not r.get("untimed")]
        return statistics.median(times) if times else None

    def ratio(value: float | None, duck: float | None, kind: str) -> str:
        if value is None or not duck:
            return "-"
        verdict = "goal met" if value / duck <= GOALS[kind] else "over"
        return f"{value / duck:.1f}x ({verdict}: {GOALS[kind]:g}x)"

    def shown(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f} s"

    for rows in sorted({r["rows"] for r in results}):
        of = [r for r in results if r["rows"] == rows]
        cold, warm, duck = median(of, "cold"), median(of, "warm"), median(of, "duckdb")
        lines.append(f"{rows:>12,}  {shown(cold):>12}  {shown(warm):>12}  {shown(duck):>8}  "
                     f"{ratio(cold, duck, 'cold'):>12}  {ratio(warm, duck, 'warm'):>12}")
    return "\n".join(lines)


def _line(r: dict) -> str:
    if r.get("kind") == "duckdb":
        same = "same figures as " + ", ".join(r["compared"]) if r["same_figures"] else (
            "DIFFERENT FIGURES: " + "; ".join(r["differences"][:5]))
        return (f"{r['rows']:>10,} rows  {r['step']:<46} {r['seconds']:8.2f} s  "
                f"{r['rows_per_s']:>10,.0f} rows/s  CPU s: {r['python_cpu_s']:.1f} ({r['threads']} threads; "
                f"{same}; load average after {r['load_1min_after']:.1f})")
    jvm = "?" if r["jvm_peak_mib"] is None else f"{r['jvm_peak_mib']:,.0f}"
    jvm_cpu = "?" if r["jvm_cpu_s"] is None else f"{r['jvm_cpu_s']:.1f}"
    split = r.get("jvm_cpu_split_s")
    if split:
        jvm_cpu += (f" (compiling {split['compiling']:.1f}, tasks {split['tasks']:.1f}, "
                    f"other {split['other']:.1f})")
    started = "" if r.get("spark_start_s") is None else f"; Spark start {r['spark_start_s']:.1f} s"
    return (f"{r['rows']:>10,} rows  {r['step']:<46} {r['seconds']:8.2f} s  "
            f"{r['rows_per_s']:>10,.0f} rows/s  "
            f"peak RSS: driver (Python) {r['driver_peak_mib']:,.0f} MiB, JVM {jvm} MiB; "
            f"CPU s: JVM {jvm_cpu}, "
            f"Python {r['python_cpu_s']:.1f} "
            f"({r['master']}, {r['cores']} cores{started}; load average after {r['load_1min_after']:.1f})")


if __name__ == "__main__":
    sys.exit(main())
