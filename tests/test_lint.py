"""`invoke lint`'s SQL half finds what `sqlfluff lint` finds, file by file."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from relq.errors import RelqError
from relq.lint import lint, show
from tests.conftest import FIXTURES, REPO

FOLDERS = ("database", "tests_tsqlt")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The clean fixture with the project's .sqlfluff and a few violations planted."""
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "clean", root)
    shutil.copy(REPO / ".sqlfluff", root / ".sqlfluff")
    # a folder's own .sqlfluff applies to its files: this one allows 200 columns, not 120
    shutil.copy(REPO / "tests_tsqlt/.sqlfluff", root / "tests_tsqlt/.sqlfluff")
    test = root / "tests_tsqlt/Worker_Job_VTests.class.sql"
    test.write_text(test.read_text() + "-- " + "x" * 150 + "\n")
    view = root / "database/views/dbo.Worker_Job_V.sql"
    view.write_text(view.read_text().replace("FROM dbo.Job AS j;", "from dbo.Job AS j  ;"))
    (root / "database/views/dbo.Broken_V.sql").write_text(
        "SET ANSI_NULLS ON;\nGO\nCREATE OR ALTER VIEW dbo.Broken_V\nAS\nSELECT FROM WHERE;\nGO\n")
    (root / "database/views/dbo.Ignored_V.sql").write_text("select 1\n")
    (root / ".sqlfluffignore").write_text("database/views/dbo.Ignored_V.sql\n")
    return root


def test_lint_finds_what_the_sqlfluff_cli_finds(root: Path) -> None:
    cli = subprocess.run([sys.executable, "-m", "sqlfluff", "lint", "--format", "json", *FOLDERS],
                         cwd=root, capture_output=True, text=True)
    assert cli.returncode == 1, cli.stderr
    expected = {(Path(r["filepath"]).as_posix(), v["start_line_no"], v["start_line_pos"], v["code"])
                for r in json.loads(cli.stdout) for v in r["violations"]}
    heard: list[tuple[int, int, str]] = []
    result = lint(root, FOLDERS, lambda *a: heard.append(a))
    assert {(v.path, v.line, v.position, v.code) for v in result.violations} == expected
    assert {v.code for v in result.violations} >= {"CP01", "LT01", "PRS"}
    assert not [v for v in result.violations if v.path.startswith("tests_tsqlt/") and v.code == "LT05"]
    assert not result.ok
    assert result.files == len(heard) == 19  # the fixture's 18 files and the broken view, not the ignored one
    assert [done for done, _, _ in heard] == list(range(1, 20))


def test_the_report_names_each_violation_and_sums_up(root: Path) -> None:
    out = io.StringIO()
    result = lint(root, FOLDERS)
    show(result, Console(file=out, width=200, highlight=False))
    lines = out.getvalue().splitlines()
    assert lines[:-1] == [str(v) for v in result.violations]
    assert "database/views/dbo.Worker_Job_V.sql:11:1: CP01 Keywords must be upper case. " \
           "[capitalisation.keywords]" in lines
    files = len({v.path for v in result.violations})
    assert lines[-1].startswith(f"sqlfluff failed: {len(result.violations)} violations in {files} files; "
                                f"19 files in ")


def test_a_clean_project_passes(tmp_path: Path) -> None:
    for path in (".sqlfluff", "database/types/dbo.AttemptNum.sql", "tests_tsqlt/.sqlfluff",
                 "tests_tsqlt/AppSettingInt_fnTests.class.sql"):  # its line 9 has 123 columns
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / path, tmp_path / path)
    result = lint(tmp_path, FOLDERS)
    assert (result.files, result.violations, result.ok) == (2, [], True)
    out = io.StringIO()
    show(result, Console(file=out, width=200))
    assert out.getvalue().startswith("sqlfluff ok: 2 files in ")


def test_a_missing_folder_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(RelqError, match="no database/ folder here"):
        lint(tmp_path, FOLDERS)
