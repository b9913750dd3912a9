"""Spark servers the pipeline tests start from the installed PySpark, on loopback only, free
ports, their files in one temporary folder: a Spark Connect server (the wheel's
sbin/start-connect-server.sh, in the foreground, on local[2]) and a standalone cluster (a
master and a worker, each its own process through bin/spark-class; the worker starts an
executor process per application). Each is started in a process group of its own, so that
stopping it ends every process it started (the JVMs, their Python workers); ``Server.stop``
checks that none is left.

The servers' Python workers run this interpreter with the repository on PYTHONPATH: the tests'
fake store (tests.pipeline.fake_store) travels into ``mapInArrow`` functions by reference."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from relq.pipeline.spark import Java

LOOPBACK = "127.0.0.1"
START_S = 180  # a cold JVM on a busy 2-core machine
STOP_S = 30


def free_port() -> int:
    """A TCP port nothing listens on at this moment, on loopback."""
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


@dataclass
class Server:
    """A started server: its process (the leader of its own process group) and its log."""

    name: str
    process: subprocess.Popen
    log: Path
    port: int
    stopped: bool = field(default=False)

    def alive(self) -> bool:
        return self.process.poll() is None

    def wait_ready(self, timeout: float = START_S, ready: str | None = None) -> None:
        """Until the server accepts connections on its port (and its log says ``ready``, if
        given); its log's tail in the failure when it ends or takes longer."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"{self.name} ended with {self.process.returncode}:\n{self.tail()}")
            if _listening(self.port) and (ready is None or ready in self.log.read_text(errors="replace")):
                return
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} did not start in {timeout:.0f} s:\n{self.tail()}")

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """SIGTERM to the server's processes, each group of them (the JVM runs its shutdown hooks:
        its temporary folders go; PySpark's worker daemons lead groups of their own), SIGKILL to
        what is left after STOP_S; then none of them remains."""
        if self.stopped:
            return
        self.stopped = True
        members = _tree(self.process.pid)
        for group in {self.process.pid, *(g for _, _, g in members)}:
            _signal(group, signal.SIGTERM)
        deadline = time.monotonic() + STOP_S
        while _alive(members) and time.monotonic() < deadline:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=0.2)
        for pid, _, _ in _alive(members):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait(timeout=STOP_S)
        deadline = time.monotonic() + STOP_S
        while _alive(members) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = sorted(pid for pid, _, _ in _alive(members))
        if left:
            raise RuntimeError(f"{self.name}: processes {left} outlived SIGKILL")


def _signal(group: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, number)


def _stat(pid: int) -> tuple[int, int, str, str] | None:
    """(parent, group, state, start time) of a process, None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), int(fields[2]), fields[0], fields[19]


def _tree(leader: int) -> set[tuple[int, str, int]]:
    """(pid, start time, group) of ``leader`` and every process under it."""
    parent: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (found := _stat(int(entry.name))):
            parent.setdefault(found[0], []).append(int(entry.name))
    members, todo = set(), [leader]
    while todo:
        pid = todo.pop()
        if (found := _stat(pid)) is not None:
            members.add((pid, found[3], found[1]))
            todo += parent.get(pid, [])
    return members


def _alive(members: set[tuple[int, str, int]]) -> list[tuple[int, str, int]]:
    """The members still running: the same pid with the same start time, not a zombie."""
    return [m for m in members if (found := _stat(m[0])) and found[3] == m[1] and found[2] != "Z"]


def _listening(port: int) -> bool:
    try:
        socket.create_connection((LOOPBACK, port), timeout=1).close()
    except OSError:
        return False
    return True


class Servers:
    """Every server of a test session, their files under one temporary folder, removed at the end."""

    def __init__(self, java: Java) -> None:
        self.java = java
        self.root = Path(tempfile.mkdtemp(prefix="relq-spark-servers-"))
        self.started: list[Server] = []

    def environment(self, name: str) -> dict[str, str]:
        """The servers' environment: the Java the pipeline uses, loopback, this interpreter for
        Python workers, and every file they write (logs, work and temporary folders) in ``root``."""
        folder = self.root / name
        for sub in ("logs", "tmp", "local", "conf"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        tmp = folder / "tmp"
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("SPARK_", "PYSPARK_")) and key not in ("JAVA_HOME", "MASTER")}
        env.update({
            "SPARK_HOME": str(spark_home()), "SPARK_CONF_DIR": str(folder / "conf"),
            "SPARK_LOG_DIR": str(folder / "logs"), "SPARK_PID_DIR": str(folder / "logs"),
            "SPARK_LOCAL_IP": LOOPBACK, "SPARK_LOCAL_DIRS": str(folder / "local"),
            "SPARK_IDENT_STRING": f"relq-tests-{os.getpid()}",
            "SPARK_DAEMON_JAVA_OPTS": f"-Djava.io.tmpdir={tmp} -Dspark.master.rest.enabled=false",
            "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": _python_path(), "TMPDIR": str(tmp),
        })
        if self.java.home:
            env["JAVA_HOME"] = self.java.home
        return env

    def _start(self, name: str, command: list[str], port: int) -> Server:
        log = self.root / name / "logs" / "console.log"
        env = self.environment(name)
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("wb") as out:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out,
                                       stderr=subprocess.STDOUT, env=env, cwd=self.root / name,
                                       start_new_session=True)
        server = Server(name, process, log, port)
        self.started.append(server)
        return server

    def connect_server(self) -> Server:
        """A Spark Connect server on local[2]: sbin/start-connect-server.sh --wait (in the
        foreground), its gRPC service on a free loopback port, no web UI."""
        port = self.port()
        tmp = self.root / "connect" / "tmp"
        self.environment("connect")
        command = [str(spark_home() / "sbin" / "start-connect-server.sh"), "--wait", "--master", "local[2]",
                   "--conf", f"spark.connect.grpc.binding.address={LOOPBACK}",
                   "--conf", f"spark.connect.grpc.binding.port={port}",
                   "--conf", "spark.ui.enabled=false",
                   "--conf", f"spark.driver.host={LOOPBACK}",
                   "--conf", f"spark.driver.bindAddress={LOOPBACK}",
                   "--conf", "spark.default.parallelism=4",  # as the tests' local session
                   "--conf", f"spark.local.dir={self.root / 'connect' / 'local'}",
                   "--conf", f"spark.driver.extraJavaOptions=-Djava.io.tmpdir={tmp}"]
        return self._start("connect", command, port)

    def standalone(self) -> tuple[Server, Server]:
        """A standalone master and one worker (2 cores, 2 GiB), each a process of its own."""
        port = self.port()
        spark_class = str(spark_home() / "bin" / "spark-class")
        master = self._start("master", [spark_class, "org.apache.spark.deploy.master.Master",
                                        "--host", LOOPBACK, "--port", str(port), "--webui-port", "0"], port)
        worker_port = self.port()
        work = self.root / "worker" / "work"
        work.mkdir(parents=True, exist_ok=True)
        worker = self._start("worker", [spark_class, "org.apache.spark.deploy.worker.Worker",
                                        f"spark://{LOOPBACK}:{port}", "--host", LOOPBACK,
                                        "--port", str(worker_port), "--webui-port", "0", "--cores", "2",
                                        "--memory", "2g", "--work-dir", str(work)], worker_port)
        return master, worker

    def port(self) -> int:
        return free_port()

    def stop(self) -> None:
        """Stop every server (the last started first), then remove their files."""
        problems = []
        for server in reversed(self.started):
            try:
                server.stop()
            except Exception as exc:  # stop the others all the same
                problems.append(str(exc))
        shutil.rmtree(self.root, ignore_errors=True)
        if problems:
            raise RuntimeError("; ".join(problems))


def _python_path() -> str:
    repo = str(Path(__file__).resolve().parents[2])
    return os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH", "")) if p)
