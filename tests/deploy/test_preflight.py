"""The preflight's decisions, on recorded answers of servers (what relq.deploy.preflight.read
returns), and the message registration that deploy runs in place of a message file."""

from __future__ import annotations

from dataclasses import replace

import pytest
import sqlfluff

from relq.compiler.facts import Definition
from relq.compiler.messages import register_sql
from relq.deploy.preflight import SERVER_SQL, Facts, Message, Server, judge, judge_server

# SQL Server 2022 Developer, a database at level 160, a sysadmin deploying.
GOOD = Facts(database="orders", engine_edition=3, product_version="16.0.4135.4",
             server_collation="SQL_Latin1_General_CP1_CI_AS", exists=True, compatibility_level=160,
             read_committed_snapshot=False, database_collation="Latin1_General_100_CI_AS_SC",
             sysadmin=True, serveradmin=False, login="deployer")
OURS = {735701: Message(16, "relq: %s owns its transaction"), 735702: Message(16, "relq: %s: %s")}


def problems(facts: Facts, messages: dict[int, Message] = OURS) -> list[str]:
    return judge(facts, messages).problems


def test_a_supported_server_passes_and_the_notes_report_rcsi_and_collations() -> None:
    verdict = judge(replace(GOOD, read_committed_snapshot=True), OURS)
    assert verdict.ok
    assert verdict.notes == [
        "server: SQL Server 16.0.4135.4, collation SQL_Latin1_General_CP1_CI_AS",
        "database orders: compatibility level 160, collation Latin1_General_100_CI_AS_SC, "
        "READ_COMMITTED_SNAPSHOT ON",
        "messages: 0 of 2 registered as the project has them, 2 to register",
    ]


def test_azure_sql_database_is_refused_with_the_reason() -> None:
    (problem,) = problems(replace(GOOD, engine_edition=5, product_version="12.0.2000.8"))
    assert problem.startswith("Azure SQL Database is not supported: it has no sp_addmessage")


def test_a_managed_instance_passes_whatever_its_version_number_says() -> None:
    assert problems(replace(GOOD, engine_edition=8, product_version="12.0.2000.8")) == []


@pytest.mark.parametrize("version, ok", [("13.0.6300.2", False), ("14.0.1000.169", True),
                                         ("15.0.2000.5", True)])
def test_sql_server_before_2017_is_refused(version: str, ok: bool) -> None:
    found = problems(replace(GOOD, product_version=version))
    assert (found == []) is ok
    if not ok:
        assert found == [f"SQL Server {version} is older than SQL Server 2017 (14.x), the oldest relq "
                         f"supports: upgrade the server"]


@pytest.mark.parametrize("edition, name", [(6, "Azure Synapse Analytics"), (9, "Azure SQL Edge")])
def test_other_engines_are_refused_by_name(edition: int, name: str) -> None:
    assert problems(replace(GOOD, engine_edition=edition))[0].startswith(f"{name} is not supported")


def test_a_database_below_level_130_is_refused_naming_the_alter_to_run() -> None:
    (problem,) = problems(replace(GOOD, compatibility_level=120))
    assert "database orders has compatibility level 120; relq needs 130 or later" in problem
    assert problem.endswith("ALTER DATABASE [orders] SET COMPATIBILITY_LEVEL = 140")


def test_a_database_to_be_created_is_judged_by_model() -> None:
    verdict = judge(replace(GOOD, exists=False, compatibility_level=120), OURS)
    (problem,) = verdict.problems
    assert problem.startswith("database orders would be created from model, which has compatibility "
                              "level 120")
    assert "to be created from model" in verdict.notes[1]


def test_a_system_database_is_refused() -> None:
    (problem,) = problems(replace(GOOD, database="master"))
    assert problem.startswith("the connection lands in the system database master")


def test_a_number_holding_another_applications_text_is_named_with_the_text_found() -> None:
    found = problems(replace(GOOD, messages={735702: Message(16, "Order %d is locked")}))
    assert found == ["message 735702 holds another application's text, which relq never overwrites: "
                     "'Order %d is locked'; free the number or ask relq's maintainers about its range"]


def test_relq_texts_of_another_version_are_relqs_own_and_are_replaced() -> None:
    older = {735701: Message(16, "relq: %s owns it"), 735702: Message(16, "relq: %s: %s")}
    verdict = judge(replace(GOOD, messages=older), OURS)
    assert verdict.ok
    assert verdict.notes[-1] == "messages: 1 of 2 registered as the project has them, 1 to register"


def test_a_login_without_serveradmin_is_refused_only_when_a_message_must_be_written() -> None:
    plain = replace(GOOD, sysadmin=False, serveradmin=False)
    (problem,) = problems(plain)
    assert problem == ("login deployer may not register messages (sp_addmessage needs sysadmin or "
                       "serveradmin), and 2 of relq's 2 messages are missing or differ (735701, 735702): "
                       "ALTER SERVER ROLE serveradmin ADD MEMBER [deployer], or have a sysadmin deploy once")
    assert problems(replace(plain, messages=dict(OURS))) == []  # all registered: nothing to write
    assert judge(replace(plain, messages=dict(OURS)), OURS).to_register == []
    assert judge(replace(GOOD, messages={735701: OURS[735701]}), OURS).to_register == [735702]
    assert problems(replace(plain, sysadmin=None, serveradmin=True)) == []


def test_a_login_whose_roles_the_server_will_not_show_counts_as_without_them() -> None:
    assert len(problems(replace(GOOD, sysadmin=None, serveradmin=None))) == 1


def test_a_login_that_does_not_control_the_database_is_told_to_make_its_user_db_owner() -> None:
    for control in (False, None):  # None: the login may not even enter the database
        assert problems(replace(GOOD, controls_database=control, sysadmin=False, serveradmin=True)) == [
            "login deployer does not control database orders (the deploy creates a schema, tables, "
            "procedures and roles, and grants on them): in it, ALTER ROLE db_owner ADD MEMBER <the "
            "login's user>, or have a db_owner deploy"]


def test_a_database_to_be_created_needs_a_login_that_may_create_databases() -> None:
    assert problems(replace(GOOD, exists=False, controls_database=None, creates_databases=False)) == [
        "login deployer may not create database orders (CREATE ANY DATABASE): ALTER SERVER ROLE dbcreator "
        "ADD MEMBER [deployer], or create the database and deploy into it"]
    assert problems(replace(GOOD, exists=False, controls_database=None)) == []


def test_a_read_only_or_offline_database_is_refused() -> None:
    assert problems(replace(GOOD, read_only=True)) == [
        "database orders is read-only (READ_ONLY, or a readable secondary): deploy to the primary, or "
        "ALTER DATABASE [orders] SET READ_WRITE"]
    assert problems(replace(GOOD, state="RESTORING", controls_database=None)) == [
        "database orders is RESTORING, not ONLINE: bring it online, then deploy"]
    assert problems(replace(GOOD, refused=976, controls_database=None)) == [
        "database orders may not be entered (error 976; a secondary replica that is not readable, say): "
        "deploy to the primary"]


def test_a_database_in_an_availability_group_whose_server_lacks_a_message_is_a_problem() -> None:
    """A message missing on a server that hosts the group's database: that replica was never given
    them, so the others may lack them too; the fix is the command, on every replica."""
    for found in ({}, {735701: OURS[735701]}):
        verdict = judge(replace(GOOD, replicated=True, messages=found), OURS)
        missing = sorted(set(OURS) - set(found))
        assert verdict.problems == [
            f"database orders is in an availability group, and this server lacks {len(missing)} of relq's 2 "
            f"messages ({', '.join(map(str, missing))}): they live in each replica's master, which the "
            f"group does not copy, and relq's errors arrive as 18054 where they are missing; register them "
            f"on every replica, this one included (invoke register-messages -c <replica>, once per "
            f"replica), then deploy"]
        assert not any("availability group" in note for note in verdict.notes)


def test_a_database_in_an_availability_group_is_told_to_register_the_messages_on_every_replica() -> None:
    """Every message here says nothing of the other replicas: a note, always, naming the command."""
    older = {735701: Message(16, "relq: %s owns it"), 735702: OURS[735702]}  # an older relq's text
    for found in (dict(OURS), older):
        verdict = judge(replace(GOOD, replicated=True, messages=found), OURS)
        assert verdict.ok
        assert verdict.notes[-1] == (
            "database orders is in an availability group: this server has relq's messages, and the "
            "preflight cannot see the other replicas' masters, which the group does not copy: run invoke "
            "register-messages -c <replica> once per replica after a deploy that changes a message and when "
            "a replica is added, or relq's errors arrive there as 18054 after a failover")
    assert judge(replace(GOOD, replicated=True, messages=older), OURS).to_register == [735701]


def test_a_database_outside_availability_groups_hears_nothing_of_replicas() -> None:
    verdict = judge(GOOD, OURS)  # no message registered yet: the deploy registers them
    assert verdict.ok and verdict.to_register == [735701, 735702]
    assert not any("availability group" in line for line in verdict.lines())


def test_a_server_where_relqs_messages_are_registered_alone_is_judged_by_the_deploys_rules() -> None:
    """`invoke register-messages`: the engine, another application's text, the login's roles;
    nothing of any database (it lands in master, which the deploy would refuse)."""
    server = Server("SQLNODE2", 3, "16.0.4135.4", sysadmin=False, serveradmin=True, login="dba")
    verdict = judge_server(server, OURS)
    assert verdict.ok and verdict.to_register == [735701, 735702]
    assert verdict.notes == ["server SQLNODE2: SQL Server 16.0.4135.4",
                             "messages: 0 of 2 registered as the project has them, 2 to register"]
    assert judge_server(replace(server, messages=dict(OURS)), OURS).to_register == []
    plain = replace(server, serveradmin=False)
    assert judge_server(plain, OURS).problems == [
        "login dba may not register messages (sp_addmessage needs sysadmin or serveradmin), and 2 of relq's "
        "2 messages are missing or differ (735701, 735702): ALTER SERVER ROLE serveradmin ADD MEMBER [dba], "
        "or have a sysadmin run it"]
    assert judge_server(replace(plain, messages=dict(OURS)), OURS).ok  # nothing to write: no right needed
    foreign = judge_server(replace(server, messages={735702: Message(16, "Order %d is locked")}), OURS)
    assert foreign.problems[0].startswith("message 735702 holds another application's text")
    assert foreign.to_register == [735701]
    azure = judge_server(replace(server, engine_edition=5, product_version="12.0.2000.8"), OURS)
    assert azure.problems[0].startswith("Azure SQL Database is not supported: it has no sp_addmessage")


def test_the_server_query_parses_as_tsql() -> None:
    assert sqlfluff.parse(SERVER_SQL, dialect="tsql")


def test_the_preflight_query_parses_as_tsql() -> None:
    from relq.deploy.preflight import FACTS_SQL

    assert sqlfluff.parse(FACTS_SQL.replace("= ?", "= N'orders'"), dialect="tsql")


def test_every_problem_is_its_own_line() -> None:
    bad = replace(GOOD, engine_edition=5, compatibility_level=100, sysadmin=False,
                  messages={735701: Message(10, "Someone else's")})
    verdict = judge(bad, OURS)
    assert len(verdict.problems) == 4
    assert all("\n" not in p for p in verdict.problems)
    assert verdict.lines()[0].startswith("problem: ")


def test_the_registration_parses_as_tsql_and_compares_the_text_byte_for_byte() -> None:
    sql = register_sql(Definition("message", "735705", 1, severity=16, text="relq: it's %s"))
    sqlfluff.parse(sql, dialect="tsql")  # raises on a parse error
    assert "m.message_id = 735705 AND m.language_id = 1033" in sql
    assert "@FoundSeverity <> 16 OR @Found <> N'relq: it''s %s' COLLATE Latin1_General_BIN2" in sql
    assert "IF (LEFT(@Found, 6) <> N'relq: ' COLLATE Latin1_General_BIN2)" in sql
