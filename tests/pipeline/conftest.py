"""One Spark session for every pipeline test: starting a JVM costs seconds. The Spark Connect
server and the standalone cluster (tests/pipeline/servers.py) are started once per test session
too, and only when a selected test needs them: as soon as the tests are collected, so that they
start while the first tests run, and are stopped, with every process and file of theirs, at the
end of the session."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.pipeline.servers import LOOPBACK, Server, Servers

CONNECT, CLUSTER = "connect_url", "cluster_url"
_SERVERS: dict[str, Any] = {}  # "servers": Servers, CONNECT: Server, CLUSTER: (master, worker)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from relq.pipeline.spark import session

    spark = session("local[2]", app="relq-tests", **{"spark.sql.shuffle.partitions": "4",
                                                      "spark.default.parallelism": "4"})
    yield spark
    spark.stop()


def _servers() -> Servers:
    """The session's servers, or a skip in one line where there is no Java for Spark."""
    from relq.errors import RelqError
    from relq.pipeline.spark import find_java

    if "servers" not in _SERVERS:
        try:
            java = find_java()
        except RelqError as exc:
            pytest.skip(f"no Java for Spark: {exc}")
        _SERVERS["servers"] = Servers(java)
    return _SERVERS["servers"]


def _start(wanted: set[str]) -> None:
    servers = _servers()
    if CONNECT in wanted and CONNECT not in _SERVERS:
        _SERVERS[CONNECT] = servers.connect_server()
    if CLUSTER in wanted and CLUSTER not in _SERVERS:
        _SERVERS[CLUSTER] = servers.standalone()


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    wanted = {name for item in items for name in getattr(item, "fixturenames", ())
              if name in (CONNECT, CLUSTER)}
    if not wanted:
        return
    try:
        _start(wanted)
    except pytest.skip.Exception:  # no Java: the tests that need the servers skip, saying so
        return


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    servers = _SERVERS.pop("servers", None)
    _SERVERS.clear()
    if servers is not None:
        servers.stop()


@pytest.fixture(scope="session")
def connect_url() -> str:
    """A Spark Connect server's URL (sc://127.0.0.1:<port>), its driver on local[2]."""
    _start({CONNECT})
    server: Server = _SERVERS[CONNECT]
    server.wait_ready()
    return f"sc://{LOOPBACK}:{server.port}"


@pytest.fixture(scope="session")
def cluster_url() -> str:
    """A standalone master's URL (spark://127.0.0.1:<port>) with one worker registered."""
    _start({CLUSTER})
    master, worker = _SERVERS[CLUSTER]
    master.wait_ready()
    worker.wait_ready(ready="Successfully registered with master")
    return f"spark://{LOOPBACK}:{master.port}"


@pytest.fixture(scope="session")
def servers_root() -> Any:
    """The servers' temporary folder (for the cluster's driver process's own files)."""
    return _servers().root
