"""The deploy plan's decisions, from a build and a journal: offline, no server."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from relq.compiler import BuildResult, build
from relq.deploy.plan import CheckConstraint, DeployRefused, Plan, format_plan, make_plan
from tests.conftest import FIXTURES, HEADER, REPO, Project
from tests.deploy.fixture_changes import (
    DATA,
    FN,
    JOB,
    MIGRATION,
    PRIORITY_CHANGES,
    VIEW,
    add_priority,
    revalidates,
)


def built(project: Project) -> BuildResult:
    result = project.build()
    assert result.ok, [str(d) for d in result.diagnostics]
    return result


def deployed(result: BuildResult) -> dict[str, str]:
    """The journal of a database that has every file of ``result``."""
    return {p: result.sources[p].checksum for p in result.order}


def actions(plan) -> dict[str, str]:
    return {s.path: s.action for s in plan.steps}


def test_a_new_database_gets_every_file_in_build_order(project: Project) -> None:
    result = built(project)
    plan = make_plan(result, {})
    assert [s.path for s in plan.steps] == result.order
    assert actions(plan)[JOB] == "create"
    assert actions(plan)[VIEW] == "create"
    assert actions(plan)[DATA] == "apply"


def test_a_deploy_right_after_a_deploy_changes_nothing(project: Project) -> None:
    result = built(project)
    plan = make_plan(result, deployed(result))
    assert plan.changes == []
    assert format_plan(plan) == ["nothing to do: the database is up to date"]


def test_a_journaled_message_the_server_lacks_is_registered_again(project: Project) -> None:
    """Messages live in master, the journal in the database: a restore onto another
    server, or a message dropped by hand, leaves the journal saying it is there."""
    result = built(project)
    plan = make_plan(result, deployed(result), unregistered=[59002])
    (step,) = plan.changes
    assert (step.path, step.action) == ("database/messages/59002.OutsideTransaction.sql", "apply")
    assert step.reason == "missing or different on the server"


def test_a_changed_view_is_altered_and_nothing_else_runs(project: Project) -> None:
    journal = deployed(built(project))
    project.edit(VIEW, "AS Token", "AS Token,\n    j.Attempts")
    plan = make_plan(built(project), journal)
    assert [(s.path, s.action) for s in plan.changes] == [(VIEW, "alter")]


def test_a_changed_table_without_a_migration_is_refused_naming_it(project: Project) -> None:
    journal = deployed(built(project))
    project.edit(JOB, "Attempts INT NOT NULL", "Priority INT NOT NULL CONSTRAINT DF_Job_Priority "
                 "DEFAULT (0),\n            Attempts INT NOT NULL")
    with pytest.raises(DeployRefused) as refused:
        make_plan(built(project), journal)
    assert f"{JOB} changed since it was deployed" in str(refused.value)
    assert "no pending migration in database/migrations alters dbo.Job" in str(refused.value)


def test_a_changed_table_with_its_migration_is_brought_up_to_date_by_it(project: Project) -> None:
    journal = deployed(built(project))
    add_priority(project)
    result = built(project)
    plan = make_plan(result, journal)
    assert [(s.path, s.action) for s in plan.changes] == PRIORITY_CHANGES
    migration = next(s for s in plan.steps if s.path == MIGRATION)
    assert migration.records == ((JOB, "tables", result.sources[JOB].checksum),)
    assert plan.counts()["migration"] == 1 and plan.counts()["migrated"] == 1
    assert result.order.index(JOB) < result.order.index(MIGRATION)


def test_a_migration_runs_once(project: Project) -> None:
    add_priority(project)
    result = built(project)
    plan = make_plan(result, deployed(result))
    assert actions(plan)[MIGRATION] == "unchanged"


def test_a_migration_changed_after_it_ran_is_refused(project: Project) -> None:
    add_priority(project)
    journal = deployed(built(project))
    project.edit(MIGRATION, "DEFAULT (0)", "DEFAULT (1)")
    with pytest.raises(DeployRefused, match=r"V0001__add_job_priority\.sql changed after it was applied"):
        make_plan(built(project), journal)


def test_migrations_run_in_version_order(project: Project) -> None:
    add_priority(project)
    project.write("database/migrations/V0002__index_priority.sql",
                  HEADER + "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE name = N'IX_Job_Priority')\n"
                  "    BEGIN\n        CREATE INDEX IX_Job_Priority ON dbo.Job (Priority);\n    END;\nGO\n")
    order = built(project).order
    assert order.index(MIGRATION) < order.index("database/migrations/V0002__index_priority.sql")


def test_a_function_that_checks_call_is_redeployed_with_those_constraints(project: Project) -> None:
    journal = deployed(built(project))
    project.edit(FN, "RETURN 0;", "RETURN CAST(0 AS BIT);")
    plan = make_plan(built(project), journal)
    (step,) = plan.changes
    assert (step.path, step.action) == (FN, "alter")
    assert step.constraints == (
        CheckConstraint("dbo.Job", "Job_HasKnown_Status", "CHECK (dbo.JobIsKnown_fn([Status]) = 1)"),
    )
    assert format_plan(plan) == [
        f"alter  dbo.JobIsKnown_fn  ({FN}): re-validates CHECK Job_HasKnown_Status on dbo.Job under a "
        f"schema-modification lock until the file commits: claims and reports on that table wait"]


def test_the_plan_names_the_rows_a_check_re_validates_with_thousands_separators(project: Project) -> None:
    journal = deployed(built(project))
    project.edit(FN, "RETURN 0;", "RETURN CAST(0 AS BIT);")
    plan = make_plan(built(project), journal)
    assert format_plan(plan, {"dbo.Job": 1234567}) == [
        f"alter  dbo.JobIsKnown_fn  ({FN}): {revalidates('~1,234,567 rows')}"]
    assert "(~1 row) under" in format_plan(plan, {"dbo.Job": 1})[0]
    assert format_plan(plan, {"dbo.Job": None}) == format_plan(plan, {}) == [
        f"alter  dbo.JobIsKnown_fn  ({FN}): CHECK Job_HasKnown_Status on dbo.Job: the table does not "
        f"exist yet, nothing to re-validate"]


def test_a_function_checks_of_several_tables_call_gets_a_line_per_table(project: Project) -> None:
    step = make_plan(built(project), {}).steps[0]
    step = replace(step, path="database/functions/dbo.IsType_fn.sql", kind="functions",
                   objects=("dbo.IsType_fn",), action="alter", constraints=(
                       CheckConstraint("dbo.Email", "Email_IsType", "CHECK (dbo.IsType_fn(A) = 1)"),
                       CheckConstraint("dbo.Sms", "Sms_IsType", "CHECK (dbo.IsType_fn(A) = 1)"),
                       CheckConstraint("dbo.Email", "Email_IsOther", "CHECK (dbo.IsType_fn(B) = 1)")))
    assert format_plan(Plan([step]), {"dbo.Email": 25000}) == [
        "alter  dbo.IsType_fn  (database/functions/dbo.IsType_fn.sql): CHECK constraints on 2 tables call it",
        "         re-validates CHECK Email_IsType, Email_IsOther on dbo.Email (~25,000 rows) under a "
        "schema-modification lock until the file commits: claims and reports on that table wait",
        "         CHECK Sms_IsType on dbo.Sms: the table does not exist yet, nothing to re-validate",
    ]


def test_the_printed_plan_names_action_object_and_file(project: Project) -> None:
    journal = deployed(built(project))
    project.edit(VIEW, "AS Token", "AS Token,\n    j.Attempts")
    project.edit(DATA, "('Processing')", "('Processing'), ('Done')")
    del journal["database/security/JobWorker.sql"]
    journal["database/views/dbo.Gone_V.sql"] = "0" * 64
    assert format_plan(make_plan(built(project), journal)) == [
        f"alter  dbo.Worker_Job_V  ({VIEW})",
        f"apply  dbo.JobStatus.sql  ({DATA}): changed",
        "apply  JobWorker  (database/security/JobWorker.sql): new",
        "kept   database/views/dbo.Gone_V.sql is no longer in the project; deploy drops nothing "
        "(drop it with a migration)",
    ]


def test_a_migration_that_only_reads_a_table_does_not_cover_its_change(project: Project) -> None:
    journal = deployed(built(project))
    project.edit(JOB, "Attempts INT NOT NULL", "Priority INT NOT NULL CONSTRAINT DF_Job_Priority "
                 "DEFAULT (0),\n            Attempts INT NOT NULL")
    project.write(MIGRATION, HEADER + "IF EXISTS (SELECT 1 FROM dbo.Job AS j WHERE j.Attempts > 99)\n"
                  "    BEGIN\n        UPDATE dbo.JobStatus SET [Status] = [Status];\n    END;\nGO\n")
    with pytest.raises(DeployRefused, match=r"no pending migration in database/migrations alters dbo\.Job"):
        make_plan(built(project), journal)


@pytest.mark.parametrize("journal_file", ["release_1_journal.json", "before_v0002_journal.json"])
def test_a_database_of_an_earlier_release_is_brought_up_to_date_by_migrations(journal_file: str) -> None:
    """The journal a deploy of an earlier release left (its files' checksums: the first
    release, and the last before V0002) against the project as it is now: every table or
    type changed since must be covered by a migration, or users could not upgrade."""
    journal = json.loads((FIXTURES / journal_file).read_text())
    current = build(REPO, write=False)
    assert current.ok, [str(d) for d in current.diagnostics]
    plan = make_plan(current, journal)  # raises DeployRefused, naming the files, if one is not
    changed = [p for p in journal if p.split("/")[1] in ("types", "tables")
               and journal[p] != current.sources[p].checksum]
    assert changed, "nothing changed since the first release: this test proves nothing now"
    assert all(actions(plan)[p] == "migrated" for p in changed)


def test_grants_are_given_again_whenever_a_migration_runs(project: Project) -> None:
    """A migration that drops an object and creates it again drops its grants with it,
    while the security file, unchanged, would be skipped."""
    journal = deployed(built(project))
    add_priority(project)
    plan = make_plan(built(project), journal)
    grants = next(s for s in plan.steps if s.path == "database/security/JobWorker.sql")
    assert (grants.action, grants.reason) == ("apply", "given again after the migrations")
    assert [s.path for s in plan.changes][-1] == grants.path  # after the migration
    after = make_plan(built(project), deployed(built(project)))
    assert after.changes == []  # no migration to run: the grants stay as they are
