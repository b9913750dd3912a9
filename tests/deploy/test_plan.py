"""The deploy plan's decisions, from a build and a journal: offline, no server."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from relq.compiler import BuildResult, build
from relq.deploy.plan import (
    SCH_M,
    SHARED,
    CheckConstraint,
    DeployRefused,
    Plan,
    SchemaChange,
    format_plan,
    make_plan,
    offline_index_builds,
)
from tests.conftest import FIXTURES, HEADER, REPO, Project
from tests.deploy.fixture_changes import (
    DATA,
    FN,
    INDEX_MIGRATION,
    INDEX_PATTERN,
    JOB,
    MIGRATION,
    PRIORITY_CHANGES,
    VIEW,
    add_attempts_index,
    add_priority,
    altered,
    indexed,
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


# -- the statements that lock a whole table ------------------------------------------------------


def step_of(plan: Plan, path: str):
    return next(s for s in plan.steps if s.path == path)


def test_a_migration_that_alters_a_table_holds_it_under_a_schema_modification_lock(project: Project) -> None:
    journal = deployed(built(project))
    add_priority(project)
    plan = make_plan(built(project), journal)
    assert step_of(plan, MIGRATION).changes == (SchemaChange("dbo.Job", "ALTER TABLE", SCH_M),)
    assert step_of(plan, MIGRATION).tables == ("dbo.Job",)
    line = f"apply     V0001__add_job_priority.sql  ({MIGRATION}): "
    assert line + altered("~1,234 rows") in format_plan(plan, {"dbo.Job": 1234})
    assert line + "ALTER TABLE on dbo.Job under a schema-modification lock until the file commits: every " \
                  "query on that table waits, NOLOCK included" in format_plan(plan)  # no server: no count
    # A table that does not exist yet (a first deploy) is created empty by this deploy: nothing waits.
    assert f"apply     V0001__add_job_priority.sql  ({MIGRATION})" in format_plan(plan, {"dbo.Job": None})


def test_the_online_pattern_is_one_index_build_offered_online(project: Project) -> None:
    journal = deployed(built(project))
    add_attempts_index(project)
    plan = make_plan(built(project), journal)
    assert step_of(plan, INDEX_MIGRATION).changes == (
        SchemaChange("dbo.Job", "CREATE INDEX IX_Job_Attempts", SHARED, online=True),)
    line = f"apply     V0002__index_job_attempts.sql  ({INDEX_MIGRATION}): "
    assert line + indexed("~5 rows", online=True) in format_plan(plan, {"dbo.Job": 5}, online=True)
    assert line + indexed("~5 rows", online=False) in format_plan(plan, {"dbo.Job": 5}, online=False)
    assert line + indexed("~5 rows", online=False).replace(
        "(this edition has no online index operations)",
        "(online instead where the edition has online index operations)") in format_plan(plan, {"dbo.Job": 5})


@pytest.mark.parametrize("statement, expected", [
    ("CREATE INDEX IX_Job_Attempts ON dbo.Job (Attempts);",
     SchemaChange("dbo.Job", "CREATE INDEX IX_Job_Attempts", SHARED)),
    ("CREATE UNIQUE CLUSTERED INDEX IX_Job_Attempts ON dbo.Job (Attempts, JobId);",
     SchemaChange("dbo.Job", "CREATE INDEX IX_Job_Attempts", SCH_M)),
    ("CREATE NONCLUSTERED INDEX IX_Job_Attempts\n    ON dbo.Job (Attempts)\n    WITH (DROP_EXISTING = ON);",
     SchemaChange("dbo.Job", "CREATE INDEX IX_Job_Attempts", SCH_M)),
    ("DROP INDEX IX_Job_Due ON [dbo].[Job];", SchemaChange("dbo.Job", "DROP INDEX IX_Job_Due", SCH_M)),
    ("/* DROP INDEX IX_Job_Due ON dbo.Job; */ UPDATE dbo.Job SET Attempts = 0;", None),
])
def test_how_each_statement_locks_its_table(project: Project, statement: str, expected) -> None:
    project.write(MIGRATION, HEADER + statement + "\nGO\n")  # unguarded: the build says so, the plan reads it
    step = step_of(make_plan(project.build(), {}), MIGRATION)
    assert step.changes == ((expected,) if expected else ())


def test_an_online_build_after_an_alter_table_of_its_table_gains_nothing_and_the_plan_says_so(
    project: Project
) -> None:
    add_priority(project)
    project.write(MIGRATION, project.read(MIGRATION) + INDEX_PATTERN)
    plan = make_plan(built(project), {})
    (text,) = [line for line in format_plan(plan, {"dbo.Job": 9}, online=True) if MIGRATION in line]
    assert text.endswith("ALTER TABLE, CREATE INDEX IX_Job_Attempts on dbo.Job (~9 rows) under a "
                         "schema-modification lock until the file commits: every query on that table "
                         "waits, NOLOCK included (its online build gains nothing there)")


# Released migrations that build indexes offline. A migration never changes once it has run
# (its checksum is journaled, and a changed one is refused), so these stay as they are; the
# plan says of each that it holds its table for the whole build.
RELEASED_OFFLINE = {"database/migrations/V0001__worker_lifecycle.sql",
                    "database/migrations/V0002__notification_due_index_type.sql"}


def test_every_new_migration_of_the_project_offers_its_index_builds_online() -> None:
    """docs/operations.md's pattern (an IF on SESSION_CONTEXT(N'relq.online'), then the build
    WITH (ONLINE = ON) or without): a migration without it blocks its table's writers for the
    whole build even on an edition that could build online."""
    found = offline_index_builds(build(REPO, write=False))
    new = {path: names for path, names in found.items() if path not in RELEASED_OFFLINE}
    assert new == {}, ("build these indexes with the online pattern of docs/operations.md (Index "
                       "builds): " + "; ".join(f"{path}: {', '.join(names)}" for path, names in new.items()))
    assert set(found) == RELEASED_OFFLINE  # each still builds offline: the plan says so of them
