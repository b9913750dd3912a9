"""A dashboard served by uvicorn on a free loopback port, in a thread, for the tests that open it
in headless Chromium: started before the test, stopped after it."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import uvicorn

WAIT_S = 15  # how long uvicorn may take to start or stop (a bound, not a measurement)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running(config: uvicorn.Config) -> Iterator[uvicorn.Server]:
    """uvicorn serving ``config`` in a thread for the block, started (its sockets bound) when the
    block begins, stopped after it (a test may stop it sooner: ``server.should_exit = True``)."""
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT_S
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield server
    finally:
        server.should_exit = True
        thread.join(WAIT_S)


def port_of(server: uvicorn.Server) -> int:
    """The port a started server listens on (its config may have asked for port 0)."""
    return server.servers[0].sockets[0].getsockname()[1]


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` served on http://127.0.0.1:<a free port> for the block; its address."""
    with running(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning")) as server:
        yield f"http://127.0.0.1:{port_of(server)}"
