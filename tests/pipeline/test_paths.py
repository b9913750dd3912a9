"""The pipeline's paths and connection are checked before Spark starts, and Spark starts quietly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from relq.errors import RelqError
from relq.pipeline.cli import main
from relq.pipeline.paths import check_folder, check_input, format_of
from tests.conftest import REPO


def _file(path: Path, text: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("name, fmt", [("items.parquet", "parquet"), ("part-0.snappy.parquet", "parquet"),
                                       ("items.CSV", "csv"), ("items.csv.gz", "csv"), ("items.jsonl", "json"),
                                       ("items.ndjson.bz2", "json"), ("items.txt", None), ("items", None)])
def test_a_file_name_says_its_format_or_nothing(name, fmt) -> None:
    assert format_of(Path(name)) == fmt


def test_inputs_spark_can_read_pass(tmp_path: Path) -> None:
    check_input("--input", str(_file(tmp_path / "items.csv")), "csv")
    check_input("--input", str(_file(tmp_path / "items.dat")), "parquet")  # the name says nothing
    folder = tmp_path / "written"
    _file(folder / "part-0.parquet")
    _file(folder / "_SUCCESS", "")
    _file(folder / ".part-0.parquet.crc")
    check_input("--input", str(folder), "parquet")
    check_input("--input", f"file://{folder}", "parquet")
    check_input("--input", "hdfs://namenode/nowhere", "json")  # another file system: Spark's to check


@pytest.mark.parametrize("make, fmt, message", [
    (lambda root: root / "missing.parquet", "parquet", "--input {path}: no such file or folder"),
    (lambda root: _file(root / "items.csv"), "parquet", "--input {path}: csv by its file names, not parquet: "
                                                        "pass --format csv"),
    (lambda root: _file(root / "f" / "part-0.json").parent, "csv", "--input {path}: json by its file names, "
                                                                   "not csv: pass --format json"),
    (lambda root: _file(root / "f" / "_SUCCESS").parent, "parquet",
     "--input {path}: the folder holds no file to read"),
])
def test_an_input_spark_cannot_read_is_one_line(tmp_path: Path, make, fmt, message) -> None:
    path = str(make(tmp_path))
    with pytest.raises(RelqError) as info:
        check_input("--input", path, fmt)
    assert str(info.value) == message.format(path=path)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads every file")
def test_an_unreadable_input_is_one_line(tmp_path: Path) -> None:
    file = _file(tmp_path / "items.parquet")
    file.chmod(0)
    with pytest.raises(RelqError, match="cannot read it \\(permission denied\\)"):
        check_input("--input", str(file), "parquet")


def test_an_archive_root_that_is_a_file_is_refused(tmp_path: Path) -> None:
    check_folder("--archive", str(tmp_path / "not yet"))
    with pytest.raises(RelqError, match="a file, not a folder"):
        check_folder("--archive", str(_file(tmp_path / "archive")))


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("relq.pipeline.spark.session", lambda *a, **k: pytest.fail("Spark started"))
    monkeypatch.setenv("RELQ_MSSQL", "DRIVER={FreeTDS};SERVER=db;UID=sa;PWD=S3cr3t-pw")


def test_a_missing_input_is_one_line_before_spark_starts(no_spark, tmp_path: Path, capsys) -> None:
    missing = tmp_path / "items.parquet"
    assert main(["enqueue", "--input", str(missing), "--rejects", str(tmp_path / "r"), "--types", "A"]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        f"pipeline.enqueue: --input {missing}: no such file or folder"]


@pytest.mark.parametrize("argv", [["enqueue", "--input", "{items}", "--rejects", "{tmp}/r", "--types", "A"],
                                  ["enqueue", "--input", "{items}", "--rejects", "{tmp}/r",
                                   "--queue", "Notification"],
                                  ["archive", "--older-than-minutes", "60", "--archive", "{tmp}/a"]])
def test_a_server_out_of_reach_is_one_line_before_spark_starts(no_spark, tmp_path: Path, capsys,
                                                               monkeypatch, argv) -> None:
    def unreachable(conn_str: str, **kwargs: object) -> None:
        raise RelqError("cannot reach SQL Server (server=db): timeout")

    monkeypatch.setattr("relq.db.connect", unreachable)
    items = _file(tmp_path / "items.parquet")
    command = argv[0]
    assert main([a.format(items=items, tmp=tmp_path) for a in argv]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        f"pipeline.{command}: cannot reach SQL Server (server=db): timeout"]


def test_spark_starts_and_fails_a_read_and_a_job_without_its_log_noise(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt"
    code = ("import pathlib\n"
            "from relq.pipeline.spark import session\n"
            "spark = session('local[1]', app='relq-quiet-test')\n"
            "try:\n"
            f"    spark.read.parquet({str(tmp_path / 'missing')!r})\n"
            "except Exception as exc:\n"
            "    print('failed as expected:', type(exc).__name__)\n"
            f"spark.range(100).write.parquet({str(corrupt)!r})\n"
            f"for part in pathlib.Path({str(corrupt)!r}).glob('part-*.parquet'):\n"
            "    data = part.read_bytes()\n"
            "    part.write_bytes(data[:4] + bytes(len(data) - 8) + data[-4:])\n"
            "try:\n"  # a failed task: Spark's executor and scheduler log it, at ERROR
            f"    spark.read.parquet({str(corrupt)!r}).count()\n"
            "except Exception as exc:\n"
            "    print('failed as expected:', type(exc).__name__)\n"
            "spark.stop()\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines() == ["failed as expected: AnalysisException",
                                                "failed as expected: Py4JJavaError"]
    # the JVM's own notice of the incubator module Spark 4 starts it with is no log4j message
    assert [line for line in done.stderr.splitlines()
            if line.strip() and not line.startswith("WARNING: Using incubator modules")] == []
