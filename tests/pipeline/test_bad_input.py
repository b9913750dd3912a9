"""A user's mistake or an unreachable resource in a pipeline command is one line and exit code 1,
a refused command line one line and exit code 2: no traceback, no Java stack, no Spark log, and
no Spark start for what can be checked before it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from relq.errors import RelqError
from relq.pipeline import cli, demo, report
from relq.pipeline.spark import find_java, one_line, require
from tests.conftest import REPO

EXTRA = "pip install -e '.[spark]'"
NOISE = ("Traceback", "Py4J", "py4j", "at org.apache", "WARN", "ERROR", "Exception in thread")
FAKE_SERVER = "DRIVER={FreeTDS};SERVER=db.invalid;UID=sa;PWD=S3cr3t-pw"
MASTERS = "(local[*], local[N], spark://host:7077, yarn or k8s://host:port)"


def _java() -> bool:
    try:
        find_java()
    except RelqError:
        return False
    return True


needs_java = pytest.mark.skipif(not _java(), reason="no Java for Spark")


def _file(path: Path, text: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _archive(root: Path) -> Path:
    """A folder that looks like an archive before Spark reads it (a Parquet name in the layout)."""
    _file(root / "Queue=SyncQueue" / "Type=A" / "Day=2024-06-03" / "part-0.parquet")
    return root


def _one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert not any(noise in lines[0] for noise in NOISE), lines[0]
    return lines[0]


def invoke(*argv: str, server: bool = False) -> tuple[int, str]:
    """``invoke <argv>`` as a user runs it: its exit code and its only line (stdout and stderr
    together: a line anywhere else fails the test)."""
    env = {k: v for k, v in os.environ.items() if k != "RELQ_MSSQL"}
    if server:
        env["RELQ_MSSQL"] = FAKE_SERVER
    done = subprocess.run([sys.executable, "-m", "invoke", "-r", str(REPO), *argv], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    return done.returncode, _one_line(done.stdout + done.stderr)


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("relq.pipeline.spark.session", lambda *a, **k: pytest.fail("Spark started"))


# -- invoke, as a user runs it: no Spark starts ------------------------------------------------------------


@pytest.mark.parametrize("argv, code, line", [
    (["--rows", "1000", "--out", "{file}"], 1, "pipeline.demo: --out {file}: a file, not a folder"),
    (["--out", "{file}/report"], 1, "pipeline.demo: --out {file}/report: {file} is a file, not a folder"),
    (["--rows", "0"], 2, "pipeline.demo: --rows must be 1 or more, not 0"),
    (["--rows", "-5"], 2, "pipeline.demo: --rows must be 1 or more, not -5"),
    (["--master", "locale[2]"], 1, f"pipeline.demo: --master locale[2]: not a Spark master {MASTERS}"),
    (["--out", "{tmp}"], 1, "pipeline.demo: --out {tmp}: {tmp}/archive holds notes.txt, which no archive "
                            "does, and the demo replaces that folder: pass another --out"),
])
def test_the_demo_refuses_a_bad_argument_in_one_line(tmp_path: Path, argv, code, line) -> None:
    file = _file(tmp_path / "README.md")
    _file(tmp_path / "archive" / "notes.txt")
    values = {"file": file, "tmp": tmp_path}
    assert invoke("pipeline.demo", *[a.format(**values) for a in argv]) == (code, line.format(**values))


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc")
def test_the_demo_refuses_a_folder_it_cannot_create() -> None:
    code, line = invoke("pipeline.demo", "--out", "/proc/nope")
    assert code == 1
    assert re.fullmatch(r"pipeline\.demo: --out /proc/nope: cannot create the folder \([^()]+\)", line), line
    assert not Path("/proc/nope").exists()


@pytest.mark.parametrize("archive, out, line", [
    ("{archive}", "{file}", "pipeline.report: --out {file}: a file, not a folder"),  # before Spark's work
    ("{archive}", "{archive}/Queue=SyncQueue",
     "pipeline.report: --out {archive}/Queue=SyncQueue is inside --archive {archive}: pass --out a folder of "
     "its own"),
    ("{tmp}/nowhere", "{tmp}/out", "pipeline.report: no archive at {tmp}/nowhere: pass the folder "
                                   "pipeline.archive writes to"),
    ("{tmp}/empty", "{tmp}/out", "pipeline.report: the archive {tmp}/empty holds no rows (no Parquet file "
                                 "under it): nothing to report"),
    ("{tmp}", "{tmp}/../out", "pipeline.report: cannot read the archive {tmp}: {file} is outside its layout "
                              "<root>/Queue=/Type=/Day=/ (pass the folder pipeline.archive writes to)"),
])
def test_the_report_refuses_a_bad_path_in_one_line_before_spark(tmp_path: Path, archive, out, line) -> None:
    values = {"archive": _archive(tmp_path / "archive"), "file": _file(tmp_path / "README.md"),
              "tmp": tmp_path}
    (tmp_path / "empty").mkdir()
    assert invoke("pipeline.report", "--archive", archive.format(**values), "--out", out.format(**values)
                  ) == (1, line.format(**values))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv, server, code, line", [
    (["--input", "x", "--format", "xml"], False, 2,
     "pipeline.enqueue: --format: invalid choice: 'xml' (choose from 'parquet', 'csv', 'json') "
     "(invoke pipeline.enqueue --help)"),
    (["--input", "{tmp}/items.parquet", "--rejects", "{tmp}/r", "--partitions", "0"], False, 2,
     "pipeline.enqueue: --partitions: must be 1 or more, not 0 (invoke pipeline.enqueue --help)"),
    (["--input", "{tmp}/missing.parquet", "--rejects", "{tmp}/r"], True, 1,
     "pipeline.enqueue: --input {tmp}/missing.parquet: no such file or folder"),
    (["--input", "{tmp}/items.parquet", "--rejects", "{tmp}/notes.txt"], True, 1,
     "pipeline.enqueue: --rejects {tmp}/notes.txt: a file, not a folder"),
    (["--input", "{tmp}/items.parquet", "--rejects", "{tmp}/docs"], True, 1,
     "pipeline.enqueue: --rejects {tmp}/docs: it is replaced on every run, and it holds notes.txt, which a "
     "Parquet folder does not: pass a new folder"),
    (["--input", "{tmp}/in", "--rejects", "{tmp}/in/rejects"], True, 1,
     "pipeline.enqueue: --rejects {tmp}/in/rejects is inside --input {tmp}/in: pass --rejects a folder "
     "of its own"),
])
def test_enqueue_refuses_a_bad_argument_in_one_line_before_spark(tmp_path: Path, argv, server, code,
                                                                 line) -> None:
    _file(tmp_path / "items.parquet")
    _file(tmp_path / "notes.txt")
    _file(tmp_path / "docs" / "notes.txt")
    _file(tmp_path / "in" / "part-0.parquet")
    assert invoke("pipeline.enqueue", *[a.format(tmp=tmp_path) for a in argv], server=server) == (
        code, line.format(tmp=tmp_path))
    assert (tmp_path / "notes.txt").read_text() == (tmp_path / "docs" / "notes.txt").read_text() == "x"


def test_archive_refuses_a_bad_argument_in_one_line(tmp_path: Path) -> None:
    assert invoke("pipeline.archive", "--older-than-minutes", "0", "--archive", str(tmp_path)) == (
        2, "pipeline.archive: --older-than-minutes: must be 1 or more, not 0 "
           "(invoke pipeline.archive --help)")


def test_python_m_relq_pipeline_names_its_own_help() -> None:
    done = subprocess.run([sys.executable, "-m", "relq.pipeline", "enqueue", "--format", "xml"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, _one_line(done.stderr), done.stdout) == (
        2, "pipeline.enqueue: --format: invalid choice: 'xml' (choose from 'parquet', 'csv', 'json') "
           "(python -m relq.pipeline enqueue --help)", "")


# -- the functions tasks.py calls, in this process ----------------------------------------------------------


def test_the_entry_points_check_every_path_before_spark(no_spark, tmp_path: Path, capsys,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    file = _file(tmp_path / "file")
    with pytest.raises(RelqError, match=f"^--out {file}: a file, not a folder$"):
        demo.run(10, file)
    (tmp_path / "out" / "report.json").mkdir(parents=True)
    with pytest.raises(RelqError) as info:
        report.run(str(_archive(tmp_path / "archive")), tmp_path / "out")
    assert str(info.value) == (f"--out {tmp_path}/out: {tmp_path}/out/report.json is a folder; the report "
                               f"writes a file there")
    with pytest.raises(RelqError) as info:
        report.run(*report.settings(None, str(tmp_path / "archive"), str(tmp_path / "o"), "yarn-client"))
    assert str(info.value) == f"--master yarn-client: not a Spark master {MASTERS}"
    monkeypatch.setenv("RELQ_MSSQL", FAKE_SERVER)
    assert cli.main(["archive", "--older-than-minutes", "5", "--archive", str(file)]) == 1
    assert cli.main(["archive", "--older-than-minutes", "5", "--archive", str(file / "archive")]) == 1
    assert cli.main(["enqueue", "--input", str(file), "--rejects", str(tmp_path / "r"), "--types", "A",
                     "--master", "mesos://m:5050"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"pipeline.archive: --archive {file}: a file, not a folder",
        f"pipeline.archive: --archive {file}/archive: {file} is a file, not a folder",
        f"pipeline.enqueue: --master mesos://m:5050: not a Spark master {MASTERS}"]


@pytest.mark.parametrize("missing, module", [("pyspark", "pyspark"), ("py4j", "py4j"),
                                             ("matplotlib", "matplotlib")])
def test_without_the_spark_extra_every_entry_point_names_it(no_spark, tmp_path: Path, capsys, missing, module,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, missing, None)  # `import pyspark` fails as if it were not installed
    line = f"{module} is missing: {EXTRA}"
    with pytest.raises(RelqError) as info:
        demo.run(10, tmp_path / "demo")
    assert str(info.value) == line
    with pytest.raises(RelqError) as info:
        report.run(str(_archive(tmp_path / "archive")), tmp_path / "out")
    assert str(info.value) == line
    if module != "matplotlib":  # enqueue and archive draw nothing
        monkeypatch.setenv("RELQ_MSSQL", FAKE_SERVER)
        assert cli.main(["enqueue", "--input", str(_file(tmp_path / "i.csv")), "--format", "csv",
                         "--rejects", str(tmp_path / "r"), "--types", "A"]) == 1
        assert capsys.readouterr().err.splitlines() == [f"pipeline.enqueue: {line}"]
    assert not (tmp_path / "demo").exists() and not (tmp_path / "out").exists()


def test_without_pyspark_the_demo_task_says_which_extra_to_install(no_spark, monkeypatch) -> None:
    from invoke import MockContext

    import tasks

    monkeypatch.setitem(sys.modules, "pyspark", None)
    with pytest.raises(tasks.Exit) as info:
        tasks.pipeline_demo(MockContext(), rows=10)
    assert (info.value.message, info.value.code) == (f"pipeline.demo: pyspark is missing: {EXTRA}", 1)


def test_a_module_missing_later_is_named_too() -> None:
    @require()
    def command() -> None:
        raise ModuleNotFoundError("No module named 'pandas.core'", name="pandas.core")

    @require()
    def broken() -> None:
        raise ModuleNotFoundError("No module named 'relq.nothing'", name="relq.nothing")

    with pytest.raises(RelqError) as info:
        command()
    assert str(info.value) == f"pandas is missing: {EXTRA}"
    with pytest.raises(ModuleNotFoundError):  # relq's own: a bug, not an installation to complete
        broken()


# -- a failure only Spark finds -----------------------------------------------------------------------------


class _Py4JJavaError(Exception):
    """A stand-in for py4j's error: what counts is the module it comes from."""


_Py4JJavaError.__module__ = "py4j.protocol"


def test_a_spark_error_becomes_one_relq_line() -> None:
    with pytest.raises(RelqError) as info, one_line("cannot write the demo archive out/archive"):
        raise _Py4JJavaError("An error occurred while calling o42.parquet.\n"
                             ": org.apache.spark.SparkException: Job aborted.\n"
                             "\tat org.apache.spark.SparkContext.runJob(SparkContext.scala:1)\n"
                             "Caused by: java.io.IOException: disk full\n"
                             "\tat org.apache.hadoop.fs.FileSystem.mkdirs(FileSystem.java:1)\n")
    assert str(info.value) == "cannot write the demo archive out/archive: java.io.IOException: disk full"
    with pytest.raises(ValueError), one_line("ignored"):  # not Spark's: relq's own bug stays visible
        raise ValueError("bug")


@needs_java
def test_a_java_error_inside_the_demo_is_its_innermost_cause_in_one_line(spark, tmp_path,
                                                                         monkeypatch) -> None:
    def failing_write(frame, root, mode="append"):
        spark.sparkContext._jvm.java.io.FileInputStream(str(tmp_path / "none"))  # a Py4JJavaError

    monkeypatch.setattr("relq.pipeline.layout.write", failing_write)
    with pytest.raises(RelqError) as info:
        demo.run(10, tmp_path / "demo", spark=spark)
    assert str(info.value) == (f"cannot write the demo archive {tmp_path / 'demo' / 'archive'}: "
                               f"java.io.FileNotFoundException: {tmp_path / 'none'} "
                               f"(No such file or directory)")
