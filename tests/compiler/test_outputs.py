"""What the build writes, and how it orders, caches and reports."""

from __future__ import annotations

import hashlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from sqlfluff.core import FluffConfig, Linter

from relq.compiler import KNOWN_CHECKS, build
from relq.compiler.report import show
from relq.errors import RelqError
from relq.progress import per_file
from tests.conftest import HEADER, Project, project_copy

REPO = Path(__file__).resolve().parents[2]


def test_the_deploy_order_follows_references_then_kinds(project: Project) -> None:
    order = project.build().order

    def at(path: str) -> int:
        return order.index(path)

    # types first; a table after the table its foreign key references; the
    # function a CHECK constraint calls pulled ahead of its table, after the
    # table the function reads; procedures after what they call; data and
    # security last.
    assert at("database/types/dbo.QueueState.sql") < at("database/tables/dbo.JobStatus.sql")
    assert (at("database/tables/dbo.JobStatus.sql") < at("database/functions/dbo.JobIsKnown_fn.sql")
            < at("database/tables/dbo.Job.sql"))
    assert (at("database/tables/dbo.Job.sql") < at("database/views/dbo.Worker_Job_V.sql")
            < at("database/procedures/dbo.Next_Job_trx.sql"))
    assert at("database/procedures/dbo.Log_Job_utx.sql") < at("database/procedures/dbo.Next_Job_trx.sql")
    assert order[-2:] == ["database/data/dbo.JobStatus.sql", "database/security/JobWorker.sql"]
    assert not any(p.startswith("tests_tsqlt/") for p in order)


def test_deploy_sql_is_identical_byte_for_byte_across_builds(project: Project) -> None:
    project.build()
    first = (project.root / "dist" / "deploy.sql").read_bytes()
    manifest = (project.root / "dist" / "manifest.json").read_bytes()
    (project.root / ".relq_cache").rename(project.root / "old_cache")  # a cold build too
    project.build()
    assert (project.root / "dist" / "deploy.sql").read_bytes() == first
    assert (project.root / "dist" / "manifest.json").read_bytes() == manifest


def test_deploy_sql_parses_with_sqlfluff_and_carries_its_checksum(project: Project) -> None:
    project.build()
    script = (project.root / "dist" / "deploy.sql").read_text(encoding="utf-8")
    parsed = Linter(config=FluffConfig(overrides={"dialect": "tsql"})).parse_string(script)
    assert parsed.violations == []
    checksum = re.search(r"^-- checksum: sha256 ([0-9a-f]{64})$", script, re.M)
    assert checksum is not None
    body = script.split("\n\n", 1)[1]
    assert hashlib.sha256(body.encode()).hexdigest() == checksum.group(1)
    assert "-- relq 0.1.0" in script.splitlines()[0]


def test_every_file_in_deploy_sql_ends_its_batch(project: Project) -> None:
    # a file that does not end in GO must not run into the next file's batch
    path = "database/data/dbo.JobStatus.sql"
    project.write(path, project.read(path).rstrip().removesuffix("GO").rstrip() + "\n")
    project.build()
    script = (project.root / "dist" / "deploy.sql").read_text(encoding="utf-8")
    section = script.split(f"-- {path} ")[1].split("-- ---")[0]
    assert section.rstrip().endswith("GO")


def test_the_manifest_lists_files_in_order_with_checksums_and_objects(project: Project) -> None:
    result = project.build()
    manifest = json.loads((project.root / "dist" / "manifest.json").read_text())
    assert [f["path"] for f in manifest["files"]] == result.order
    job = next(f for f in manifest["files"] if f["path"].endswith("dbo.Job.sql"))
    assert job["depends_on"] == ["database/functions/dbo.JobIsKnown_fn.sql",
                                 "database/tables/dbo.JobStatus.sql",
                                 "database/types/dbo._Timestamp.sql"]
    assert len(job["sha256"]) == 64
    log = next(o for o in manifest["objects"] if o["name"] == "dbo.Log_Job_utx")
    assert log["kind"] == "procedure"
    assert log["parameters"][1] == {"name": "@Note", "type": "NVARCHAR(100)",
                                    "default": True, "output": False}
    assert manifest["messages"] == [59001, 59002, 59003]


def test_a_rebuild_parses_only_the_changed_file(project: Project) -> None:
    assert project.build().parsed == 0  # the copy came with a warm cache
    project.edit("database/views/dbo.Worker_Job_V.sql", "AS Token", "AS Token2")
    project.edit("database/procedures/dbo.Next_Job_trx.sql", "v.Token", "v.Token2")
    result = project.build()
    assert result.parsed == 2
    assert result.ok


def test_a_cold_build_reports_each_file_as_it_is_parsed_and_a_warm_one_none(project: Project) -> None:
    (project.root / ".relq_cache").rename(project.root / "old_cache")
    heard: list[tuple[int, int, str]] = []
    result = build(project.root, on_parsed=lambda *a: heard.append(a))
    assert result.parsed == result.files == 18  # in worker processes (12 or more files)
    assert [(done, total) for done, total, _ in heard] == [(n, 18) for n in range(1, 19)]
    assert sorted(path for _, _, path in heard) == sorted(result.sources)
    project.edit("database/views/dbo.Worker_Job_V.sql", "AS Token", "AS Token2")
    heard.clear()
    build(project.root, on_parsed=lambda *a: heard.append(a))  # in this process
    assert heard == [(1, 1, "database/views/dbo.Worker_Job_V.sql")]


@pytest.mark.parametrize("terminal", [True, False])
def test_progress_shows_on_a_terminal_only(terminal: bool) -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=100)
    with per_file(console, "parsing") as on_file:
        on_file(1, 2, "database/views/dbo.Worker_Job_V.sql")
        on_file(2, 2, "database/tables/dbo.Job.sql")
    shown = out.getvalue()
    assert ("parsing" in shown) is terminal
    assert ("dbo.Job.sql" in shown) is terminal


def test_crlf_and_a_bom_change_nothing(project: Project) -> None:
    project.build()
    before = (project.root / "dist" / "deploy.sql").read_bytes()
    path = project.root / "database/views/dbo.Worker_Job_V.sql"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))
    project.build()
    assert (project.root / "dist" / "deploy.sql").read_bytes() == before


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_a_utf16_file_with_its_mark_builds_as_its_utf8_twin(project: Project, encoding: str) -> None:
    """SQL Server Management Studio saves "Unicode" as UTF-16 with a byte-order mark."""
    project.build()
    before = (project.root / "dist" / "deploy.sql").read_bytes()
    view = "database/views/dbo.Worker_Job_V.sql"
    (project.root / view).write_bytes("\ufeff".encode(encoding) + project.read(view).encode(encoding))
    assert project.build().ok
    assert (project.root / "dist" / "deploy.sql").read_bytes() == before


def test_a_failed_build_leaves_no_stale_script(project: Project) -> None:
    project.build()
    assert (project.root / "dist" / "deploy.sql").exists()
    project.edit("database/views/dbo.Worker_Job_V.sql", "FROM dbo.Job", "FROM dbo.Nope")
    assert not project.build().ok
    assert not (project.root / "dist" / "deploy.sql").exists()
    assert not (project.root / "dist" / "manifest.json").exists()


def test_a_parse_error_is_reported_once_not_by_every_user(project: Project) -> None:
    project.edit("database/procedures/dbo.Log_Job_utx.sql", "SET NOCOUNT ON;", "SET NOCOUNT ON (;")
    problems = project.problems()
    assert len(problems) == 1 and "[parse]" in problems[0]


def test_the_report_names_each_problem_and_sums_up(project: Project, capsys) -> None:
    project.edit("database/views/dbo.Worker_Job_V.sql", "FROM dbo.Job", "FROM dbo.Nope")
    show(project.build(), Console(file=sys.stdout, soft_wrap=True, highlight=False))
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("database/views/dbo.Worker_Job_V.sql:11: unknown table or view dbo.Nope "
                      "(in SELECT) [unknown-table]")
    assert out[-1].startswith("build failed: 1 problem in 1 file; 18 files (1 parsed, 17 from cache) in ")


def test_the_project_itself_builds_clean(tmp_path: Path) -> None:
    root = project_copy(tmp_path)
    result = build(root)
    assert [str(d) for d in result.diagnostics] == []
    assert (root / "dist" / "deploy.sql").exists()


def test_the_docs_explain_every_check() -> None:
    page = (REPO / "docs/build.md").read_text(encoding="utf-8")
    assert {c for c in KNOWN_CHECKS | {"parse", "layout", "duplicate-object", "cycle"}
            if f"`{c}`" not in page} == set()


def test_invoke_lists_every_task_with_its_help() -> None:
    out = subprocess.run([sys.executable, "-m", "invoke", "--list"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    tasks = dict(re.findall(r"^  (\S+)\s+(\S.*)$", out, re.M))
    assert {"build", "lint", "fix", "test"} <= set(tasks)
    assert all(help_text for help_text in tasks.values())


def test_a_missing_database_folder_is_one_clear_line(tmp_path: Path) -> None:
    with pytest.raises(RelqError, match="no database/ folder here"):
        build(tmp_path)


def test_a_new_object_needs_no_registration(project: Project) -> None:
    project.write("database/views/dbo.Due_Job_V.sql",
                  HEADER + "/* dbo.Due_Job_V: jobs that are due. */\nCREATE OR ALTER VIEW dbo.Due_Job_V\n"
                  "AS\nSELECT v.JobId FROM dbo.Worker_Job_V AS v;\nGO\n")
    project.write("tests_tsqlt/Due_Job_VTests.class.sql",
                  HEADER + "EXEC tSQLt.NewTestClass 'Due_Job_VTests';\nGO\n")
    result = project.build()
    assert result.ok
    assert result.order.index("database/views/dbo.Worker_Job_V.sql") < result.order.index(
        "database/views/dbo.Due_Job_V.sql")


def test_the_ci_workflow_is_yaml_and_runs_only_documented_commands() -> None:
    import yaml

    workflow = yaml.safe_load((REPO / ".github/workflows/ci.yml").read_text(encoding="utf-8"))
    readme = "\n".join(p.read_text(encoding="utf-8")
                       for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))])
    runs = [step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step]
    assert runs
    for run in runs:
        for command in re.split(r"\s*(?:&&|\|)\s*", run):
            if command.startswith((".venv/bin/", "python3 -m venv")):
                name = command.split(" 2>&1")[0]
                assert name.split(" --create-db")[0] in readme, command
            else:  # system set-up and checks of the output, not project commands
                assert command.startswith(("sudo apt-get", "tee ", "grep ")), command
    assert yaml.safe_load((REPO / "compose.yaml").read_text())["services"]["mssql"]["image"].startswith(
        "mcr.microsoft.com/mssql/server:2022")


def test_the_docs_list_every_registered_error_number() -> None:
    page = (REPO / "docs/errors.md").read_text(encoding="utf-8")
    listed = {int(n) for n in re.findall(r"^\| (\d{5,}) \|", page, re.M)}
    registered = {int(p.name.split(".")[0]) for p in (REPO / "database/messages").glob("*.sql")}
    assert listed == registered


def test_a_view_over_a_cte_lists_its_outer_columns(project: Project) -> None:
    project.write("database/views/dbo.Due_Job_V.sql",
                  HEADER + "/* dbo.Due_Job_V: due jobs. */\nCREATE OR ALTER VIEW dbo.Due_Job_V\nAS\n"
                  "WITH due AS (SELECT j.JobId, j.ScheduledFor FROM dbo.Job AS j)\n"
                  "SELECT due.JobId AS DueJob FROM due;\nGO\n")
    project.write("tests_tsqlt/Due_Job_VTests.class.sql",
                  HEADER + "EXEC tSQLt.NewTestClass 'Due_Job_VTests';\nGO\n")
    assert project.build().ok
    manifest = json.loads((project.root / "dist" / "manifest.json").read_text())
    view = next(o for o in manifest["objects"] if o["name"] == "dbo.Due_Job_V")
    assert [c["name"] for c in view["columns"]] == ["DueJob"]


def test_a_check_constraint_is_kept_as_written_for_deploy_to_re_add(project: Project) -> None:
    project.edit("database/tables/dbo.Job.sql", "CHECK (dbo.JobIsKnown_fn([Status]) = 1)",
                 "CHECK (dbo.JobIsKnown_fn([Status]) = 1 OR [Status] = 'a  b')")
    result = project.build()
    (check,) = [c for d in result.facts["database/tables/dbo.Job.sql"].definitions
                for c in d.constraints if c.kind == "CHECK"]
    assert check.definition == "CHECK (dbo.JobIsKnown_fn([Status]) = 1 OR [Status] = 'a  b')"


def test_deploy_sql_drops_and_re_adds_the_checks_around_a_function_they_call(project: Project) -> None:
    # SQL Server refuses to ALTER a function a CHECK constraint calls: a second run of
    # the script must drop the constraint first and re-add it after, as deploy does.
    assert project.build().ok
    script = (project.root / "dist" / "deploy.sql").read_text(encoding="utf-8")
    drop = script.index("ALTER TABLE [dbo].[Job] DROP CONSTRAINT [Job_HasKnown_Status];")
    alter = script.index("CREATE OR ALTER FUNCTION dbo.JobIsKnown_fn")
    add = script.index("ALTER TABLE [dbo].[Job] WITH CHECK ADD CONSTRAINT [Job_HasKnown_Status]")
    table = script.index("CONSTRAINT Job_HasKnown_Status CHECK")
    assert drop < alter < add < table  # on a fresh database the table comes later: the re-add is skipped
    assert "IF OBJECT_ID(N'dbo.Job', N'U') IS NOT NULL" in script[alter:add + 200]
