"""The pipeline benchmark's reading of the JVM's CPU by thread (bench/pipeline_bench.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from bench.pipeline_bench import jvm_cpu_split, thread_cpu

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc, which Linux has")
TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _thread(proc: Path, pid: int, tid: int, name: str, ticks: int) -> None:
    """A /proc/<pid>/task/<tid>/stat line as Linux writes it (proc(5)): utime and stime are
    the 14th and 15th fields; the name, in parentheses, may hold spaces and parentheses."""
    folder = proc / str(pid) / "task" / str(tid)
    folder.mkdir(parents=True)
    after = ["S", "1", "1", "1", "0", "-1", "0", "0", "0", "0", "0", str(ticks), str(ticks), "0"]
    (folder / "stat").write_text(f"{tid} ({name}) " + " ".join(after) + "\n")


def test_the_jvms_cpu_is_split_into_compiling_tasks_and_the_rest(tmp_path) -> None:
    names = {1: "C2 CompilerThre", 2: "C1 CompilerThre", 3: "Executor task i", 4: "Executor task i",
             5: "GC Thread#0", 6: "Thread-3 (x)"}
    for tid, name in names.items():
        _thread(tmp_path, 42, tid, name, TICK * tid)  # thread n used 2n seconds: n user, n system
    before = thread_cpu(42, tmp_path)
    assert before == {"C2 CompilerThre": 2.0, "C1 CompilerThre": 4.0, "Executor task i": 14.0,
                      "GC Thread#0": 10.0, "Thread-3 (x)": 12.0}
    after = {**before, "C2 CompilerThre": 7.0, "Executor task i": 20.0, "GC Thread#0": 11.5,
             "a thread started since": 0.5}
    assert jvm_cpu_split(before, after) == {"compiling": 5.0, "tasks": 6.0, "other": 2.0}


def test_a_process_that_is_gone_has_no_threads(tmp_path) -> None:
    assert thread_cpu(7, tmp_path) == {}


def test_this_process_threads_are_read_from_proc() -> None:
    found = thread_cpu(os.getpid())
    assert found and all(seconds >= 0 for seconds in found.values())


def test_the_summary_prints_each_reports_time_over_duckdbs_against_its_goal() -> None:
    from bench.pipeline_bench import _summary

    results = [
        {"rows": 5_000_000, "kind": "cold", "seconds": 16.0},
        {"rows": 5_000_000, "kind": "warm", "seconds": 99.0, "untimed": True},  # the first run: not counted
        {"rows": 5_000_000, "kind": "warm", "seconds": 5.0},
        {"rows": 5_000_000, "kind": "warm", "seconds": 7.0},
        {"rows": 5_000_000, "kind": "warm", "seconds": 9.0},
        {"rows": 5_000_000, "kind": "duckdb", "seconds": 4.0},
        {"rows": 20_000_000, "kind": "cold", "seconds": 30.0},
        {"rows": 20_000_000, "kind": "duckdb", "seconds": 10.0},
    ]
    lines = _summary(results).strip().splitlines()
    assert lines[1].split() == ["5,000,000", "16.00", "s", "7.00", "s", "4.00", "s", "4.0x", "(goal", "met:",
                                "4x)", "1.8x", "(goal", "met:", "2x)"]
    assert lines[2].split() == ["20,000,000", "30.00", "s", "-", "10.00", "s", "3.0x", "(goal", "met:", "4x)",
                                "-"]
    over = _summary([{"rows": 1, "kind": "warm", "seconds": 2.1},
                     {"rows": 1, "kind": "duckdb", "seconds": 1.0}])
    assert "2.1x (over: 2x)" in over
