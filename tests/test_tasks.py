"""tasks.py: the commands' own behaviour, offline (the package's logic has its own tests)."""

from __future__ import annotations

import sys

import pytest
from invoke import MockContext, Result

import tasks


def test_invoke_test_names_its_phases_and_runs_them_in_order(monkeypatch, capsys) -> None:
    ran: list[str] = []
    monkeypatch.setattr(tasks, "lint", lambda c: ran.append("lint"))
    monkeypatch.setattr(tasks, "build", lambda c: ran.append("build"))
    monkeypatch.delenv("RELQ_MSSQL", raising=False)
    c = MockContext(run=Result())
    tasks.test(c)
    c.run.assert_called_once_with(f"{sys.executable} -m pytest", pty=False)
    assert ran == ["lint", "build"]
    phases = [line for line in capsys.readouterr().err.splitlines() if line.startswith("test: ")]
    assert phases == ["test: 1/3 lint (sqlfluff, ruff)", "test: 2/3 build", "test: 3/3 pytest"]


def test_invoke_test_stops_at_the_first_failed_phase(monkeypatch, capsys) -> None:
    def failed_lint(c) -> None:
        raise tasks.Exit(code=1)

    monkeypatch.setattr(tasks, "lint", failed_lint)
    monkeypatch.setattr(tasks, "build", lambda c: pytest.fail("build ran after a failed lint"))
    c = MockContext(run=Result())
    with pytest.raises(tasks.Exit):
        tasks.test(c)
    assert not c.run.called
