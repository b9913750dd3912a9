"""relq's commands. Each task parses its arguments and calls the relq package."""

from __future__ import annotations

import sys
from pathlib import Path

from invoke import Exit, task

ROOT = Path(__file__).resolve().parent
SQL_FOLDERS = "database tests_tsqlt"
PYTHON = "relq tests bench tasks.py"


def _tool(name: str) -> str:
    """A console script of this environment (the one running invoke)."""
    return str(Path(sys.executable).parent / name)


@task
def build(c):
    """Check database/ and tests_tsqlt/ offline; write dist/deploy.sql and dist/manifest.json."""
    from relq.build import build as run_build
    from relq.build.report import show
    from relq.errors import RelqError

    try:
        result = run_build(ROOT)
    except RelqError as exc:
        raise Exit(f"build: {exc}", code=1) from None
    show(result)
    if not result.ok:
        raise Exit(code=1)


@task
def lint(c):
    """Check the house style: .sql files with sqlfluff and .sqlfluff, Python with ruff."""
    c.run(f"{_tool('sqlfluff')} lint {SQL_FOLDERS}", pty=False)
    c.run(f"{_tool('ruff')} check {PYTHON}", pty=False)


@task
def fix(c):
    """Rewrite .sql files to the house style with sqlfluff's fixes (and Python with ruff's)."""
    c.run(f"{_tool('sqlfluff')} fix {SQL_FOLDERS}", pty=False)
    c.run(f"{_tool('ruff')} check --fix {PYTHON}", pty=False)


@task(pre=[lint, build])
def test(c):
    """Run the offline tests: lint, build, then pytest."""
    c.run(f"{sys.executable} -m pytest", pty=False)
