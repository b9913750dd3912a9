"""The preflight: what a DBA checks before relq's first deploy, asked of the server
before anything changes. `invoke deploy` runs it first and stops on any problem;
`invoke deploy --check` runs only it; `--dry-run` prints it with the plan.

Each problem is one line that names what to run or grant. The server's answers
come from one query (:func:`read`); the judgement (:func:`judge`) is pure, so the
offline tests feed it recorded answers.

Sources for the rules:
- engines: SERVERPROPERTY('EngineEdition') is 5 on Azure SQL Database, 8 on Azure
  SQL Managed Instance, 1 to 4 on SQL Server; 'ProductMajorVersion' 14 is SQL Server
  2017 (https://learn.microsoft.com/sql/t-sql/functions/serverproperty-transact-sql).
  Azure SQL Database has no sp_addmessage ("Applies to: SQL Server",
  https://learn.microsoft.com/sql/relational-databases/system-stored-procedures/sp-addmessage-transact-sql),
  and relq's procedures raise registered messages.
- compatibility level 130: OPENJSON, which the claims use, "is available only under
  compatibility level 130 or higher"
  (https://learn.microsoft.com/sql/t-sql/functions/openjson-transact-sql).
- sp_addmessage "Requires membership in the sysadmin or serveradmin fixed server
  roles"; IS_SRVROLEMEMBER answers NULL when the caller may not see the membership
  (https://learn.microsoft.com/sql/t-sql/functions/is-srvrolemember-transact-sql).
- message numbers are server-wide (relq.compiler.messages).
- rights in the database: the deploy creates a schema, types, tables, modules and roles
  owned by dbo, and grants on them: CONTROL of the database (db_owner's). Asked in the
  database itself, since the preflight of --create-db runs in master:
  HAS_PERMS_BY_NAME(NULL, 'DATABASE', ...) is the current database ("for database-level
  entities ... null meaning 'current database'",
  https://learn.microsoft.com/sql/t-sql/functions/has-perms-by-name-transact-sql), and only
  where HAS_DBACCESS says the login may enter it
  (https://learn.microsoft.com/sql/t-sql/functions/has-dbaccess-transact-sql) and it is
  ONLINE; a database that refuses to be entered all the same (a secondary that is not
  readable) is a problem of its own, with SQL Server's error number. Creating it
  needs CREATE ANY DATABASE (dbcreator's), asked of the server (the same page's example A).
- availability groups: user-defined messages "reside in the sys.messages catalog view. This
  catalog view is stored in master", and a database made available on another server instance
  (an availability replica, a restore) needs them added there with sp_addmessage
  (https://learn.microsoft.com/sql/relational-databases/databases/manage-metadata-when-making-a-database-available-on-another-server#user-defined-error-messages).
  The rule for a database in a group is :func:`_replicas`'.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from relq import db
from relq.compiler.facts import FileFacts
from relq.compiler.messages import MESSAGE_MARK, US_ENGLISH, message_files
from relq.errors import RelqError

SYSTEM_DATABASES = frozenset({"master", "model", "msdb", "tempdb"})
MIN_COMPATIBILITY = 130  # OPENJSON
MIN_MAJOR_VERSION = 14  # SQL Server 2017
SQL_SERVER_EDITIONS = frozenset({1, 2, 3, 4})  # Personal/Desktop, Standard, Enterprise, Express
AZURE_SQL_DATABASE, MANAGED_INSTANCE = 5, 8
OTHER_ENGINES = {6: "Azure Synapse Analytics", 9: "Azure SQL Edge", 11: "Azure Synapse serverless SQL pool",
                 12: "Microsoft Fabric"}

# Server-wide facts, and those of the target database (or of model, which a database
# that deploy creates is copied from).
FACTS_SQL = """
SET NOCOUNT ON;
DECLARE @Name SYSNAME = ?;
DECLARE @Exists BIT = CASE WHEN DB_ID(@Name) IS NULL THEN 0 ELSE 1 END;
DECLARE @Control INT = NULL;
DECLARE @Refused INT = NULL;
DECLARE @InDatabase NVARCHAR(300) = QUOTENAME(@Name) + N'.sys.sp_executesql';
IF (@Exists = 1 AND HAS_DBACCESS(@Name) = 1 AND DATABASEPROPERTYEX(@Name, 'Status') = 'ONLINE')
    BEGIN
        BEGIN TRY
            EXEC @InDatabase
                N'SET @Control = HAS_PERMS_BY_NAME(NULL, N''DATABASE'', N''CONTROL'');',
                N'@Control INT OUTPUT',
                @Control = @Control OUTPUT;
        END TRY
        BEGIN CATCH
            SET @Refused = ERROR_NUMBER(); -- a secondary that is not readable: 976, 978
        END CATCH;
    END;
SELECT
    CAST(SERVERPROPERTY('EngineEdition') AS INT),
    CAST(SERVERPROPERTY('ProductVersion') AS NVARCHAR(128)),
    CAST(SERVERPROPERTY('Collation') AS NVARCHAR(128)),
    @Exists,
    d.compatibility_level,
    d.is_read_committed_snapshot_on,
    d.collation_name,
    IS_SRVROLEMEMBER('sysadmin'),
    IS_SRVROLEMEMBER('serveradmin'),
    SUSER_SNAME(),
    @Control,
    HAS_PERMS_BY_NAME(NULL, NULL, 'CREATE ANY DATABASE'),
    CAST(DATABASEPROPERTYEX(@Name, 'Updateability') AS NVARCHAR(20)),
    d.state_desc,
    CASE WHEN @Exists = 1 AND d.replica_id IS NOT NULL THEN 1 ELSE 0 END,
    @Refused
FROM sys.databases AS d
WHERE d.name = CASE WHEN @Exists = 1 THEN @Name ELSE N'model' END;
"""

# What `invoke register-messages` asks of a server, in whichever database it lands (master):
# the engine, the server's own name (a replica's, not a listener's), and the login's roles.
SERVER_SQL = """
SET NOCOUNT ON;
SELECT
    CAST(SERVERPROPERTY('EngineEdition') AS INT),
    CAST(SERVERPROPERTY('ProductVersion') AS NVARCHAR(128)),
    CAST(SERVERPROPERTY('ServerName') AS NVARCHAR(256)),
    IS_SRVROLEMEMBER('sysadmin'),
    IS_SRVROLEMEMBER('serveradmin'),
    SUSER_SNAME();
"""


@dataclass(frozen=True)
class Message:
    severity: int
    text: str


@dataclass(frozen=True)
class Facts:
    """What the server said, as :func:`read` reads it."""

    database: str
    engine_edition: int
    product_version: str  # 14.0.3465.1
    server_collation: str
    exists: bool  # False: deploy --create-db makes it, from model
    compatibility_level: int
    read_committed_snapshot: bool
    database_collation: str
    sysadmin: bool | None  # None: the server would not say
    serveradmin: bool | None
    login: str
    messages: dict[int, Message] = field(default_factory=dict)  # relq's numbers that are taken
    controls_database: bool | None = True  # CONTROL of it; None: the login may not enter it
    creates_databases: bool | None = True  # CREATE ANY DATABASE
    read_only: bool = False  # READ_ONLY, or a readable secondary
    state: str = "ONLINE"  # of the database (of model when it does not exist yet)
    replicated: bool = False  # in an availability group: other replicas have masters of their own
    refused: int | None = None  # the error SQL Server raised when the preflight entered the database


@dataclass(frozen=True)
class Server:
    """What the server said of itself, as :func:`read_server` reads it: what registering
    relq's messages needs, and no database."""

    name: str  # SERVERPROPERTY('ServerName'): the instance, whatever name the connection used
    engine_edition: int
    product_version: str
    sysadmin: bool | None
    serveradmin: bool | None
    login: str
    messages: dict[int, Message] = field(default_factory=dict)  # relq's numbers that are taken


@dataclass
class Verdict:
    problems: list[str]
    notes: list[str]
    to_register: list[int] = field(default_factory=list)  # relq's messages missing or differing

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        return [f"problem: {p}" for p in self.problems] + self.notes


class PreflightFailed(RelqError):
    """The server or the database is not ready for relq: nothing was changed."""


def project_messages(facts: Mapping[str, FileFacts]) -> dict[int, Message]:
    """The messages the project registers, by number, from the build's facts (the build's
    check message-mark, which no allow silences, makes sure that their severity and text
    are literals)."""
    return {int(d.name): Message(d.severity, d.text) for d in message_files(facts).values()}


def read(cursor, database: str, numbers: list[int]) -> Facts:
    """The server's answers for ``database`` (which may not exist yet)."""
    rows = db.query(cursor, FACTS_SQL, database)
    if not rows:
        raise RelqError(f"the server shows neither database {database} nor model in sys.databases: "
                        f"the login needs to see them (VIEW ANY DATABASE)")
    (edition, version, server_collation, exists, level, rcsi, collation, sysadmin, serveradmin,
     login, control, create, updateability, state, replicated, refused), = rows
    return Facts(database, edition, version, server_collation, bool(exists), level, bool(rcsi), collation,
                 _flag(sysadmin), _flag(serveradmin), login, registered(cursor, numbers),
                 _flag(control), _flag(create), updateability == "READ_ONLY", state, bool(replicated),
                 refused)


def read_server(cursor, numbers: list[int]) -> Server:
    """The server's answers for registering relq's messages (``numbers``) on it."""
    (edition, version, name, sysadmin, serveradmin, login), = db.query(cursor, SERVER_SQL)
    return Server(name or "?", edition, version, _flag(sysadmin), _flag(serveradmin), login,
                  registered(cursor, numbers))


def registered(cursor, numbers: list[int]) -> dict[int, Message]:
    """The server's (US English) messages of ``numbers``, by number."""
    if not numbers:
        return {}
    listed = ", ".join(str(int(n)) for n in numbers)
    return {n: Message(severity, text) for n, severity, text in db.query(
        cursor, f"SELECT message_id, severity, [text] FROM sys.messages "
                f"WHERE language_id = {US_ENGLISH} AND message_id IN ({listed});")}


def still_to_register(cursor, messages: dict[int, Message], numbers: list[int]) -> list[int]:
    """Of ``numbers`` (the preflight's to_register), those the server still has otherwise than
    ``messages``: read again under the deploy lock, since a deploy that held it first may have
    registered them meanwhile (its plan would then run their files again for nothing)."""
    found = registered(cursor, numbers)
    return [n for n in numbers if found.get(n) != messages[n]]


def judge(facts: Facts, messages: dict[int, Message]) -> Verdict:
    """The problems that stop a deploy, each one line naming the fix, and the notes a
    DBA reads either way."""
    problems: list[str] = []
    name = facts.database
    if name.casefold() in SYSTEM_DATABASES:
        problems.append(f"the connection lands in the system database {name}: name the target "
                        f"with DATABASE=... in the connection string, or pass --create-db NAME")
    problems += _engine(facts)
    problems += _rights(facts)
    if facts.compatibility_level < MIN_COMPATIBILITY:
        whose = (f"database {name} has" if facts.exists
                 else f"database {name} would be created from model, which has")
        problems.append(f"{whose} compatibility level {facts.compatibility_level}; relq needs "
                        f"{MIN_COMPATIBILITY} or later (its claims use OPENJSON): "
                        + (f"ALTER DATABASE [{name}] SET COMPATIBILITY_LEVEL = 140" if facts.exists
                           else "create the database yourself at level 140 or later, then deploy"))
    found, foreign, to_write = _messages(facts, messages, "deploy once")
    problems += found
    notes = [
        f"server: {_engine_name(facts)} {facts.product_version}, collation {facts.server_collation}",
        f"database {name}: " + ("" if facts.exists else "to be created from model; ")
        + f"compatibility level {facts.compatibility_level}, collation {facts.database_collation}, "
        f"READ_COMMITTED_SNAPSHOT {'ON' if facts.read_committed_snapshot else 'OFF'}",
        f"messages: {len(messages) - len(to_write) - len(foreign)} of {len(messages)} registered as "
        f"the project has them" + (f", {len(to_write)} to register" if to_write else ""),
    ]
    if facts.replicated:
        problems += _replicas(name, messages, facts.messages, notes)
    return Verdict(problems, notes, to_write)


def judge_server(server: Server, messages: dict[int, Message]) -> Verdict:
    """What stops `invoke register-messages` on a server (another application's text in one of
    relq's numbers, a login that may not register what is missing, an engine without
    sp_addmessage), and what it is to register: the deploy's rules, without a database."""
    problems = _engine(server)
    found, foreign, to_write = _messages(server, messages, "run it")
    notes = [f"server {server.name}: {_engine_name(server)} {server.product_version}",
             f"messages: {len(messages) - len(to_write) - len(foreign)} of {len(messages)} registered "
             f"as the project has them" + (f", {len(to_write)} to register" if to_write else "")]
    return Verdict(problems + found, notes, to_write)


REGISTER_COMMAND = "invoke register-messages -c <replica>"


def _replicas(name: str, messages: dict[int, Message], found: dict[int, Message],
              notes: list[str]) -> list[str]:
    """The rule for a database in an availability group: its problem, if any; else a note,
    appended to ``notes``.

    The preflight sees this server's master alone; the other replicas' are out of its reach. So
    relq's messages registered here prove nothing of them, and the verdict always says to register
    them on every replica: as a note while every one is here. Where one of them is missing here,
    though, the group is known to be out of step: this server was never given them, although it
    hosts the database (a failover to it, or a replica added since), so other replicas may lack them
    too, and any of them raises relq's errors as 18054 once it is primary. That is a problem, with
    the command to run on each replica as its fix: the deploy would register them on this server
    only. A relq text that merely differs (an older relq's) keeps its number working, so it stays a
    note: the deploy updates it here."""
    missing = sorted(n for n in messages if n not in found)
    if missing:
        return [f"database {name} is in an availability group, and this server lacks {len(missing)} of "
                f"relq's {len(messages)} messages ({_numbers(missing)}): they live in each replica's "
                f"master, which the group does not copy, and relq's errors arrive as 18054 where they "
                f"are missing; register them on every replica, this one included ({REGISTER_COMMAND}, "
                f"once per replica), then deploy"]
    notes.append(f"database {name} is in an availability group: this server has relq's messages, and the "
                 f"preflight cannot see the other replicas' masters, which the group does not copy: run "
                 f"{REGISTER_COMMAND} once per replica after a deploy that changes a message and when a "
                 f"replica is added, or relq's errors arrive there as 18054 after a failover")
    return []


def _messages(facts: Facts | Server, messages: dict[int, Message],
              otherwise: str) -> tuple[list[str], dict[int, Message], list[int]]:
    """Of relq's ``messages``: the problems (another application's text in one of the numbers; a
    login that may not register one that is missing or differs), the numbers holding another
    application's text, and those to register. ``otherwise``: what a sysadmin does instead."""
    problems: list[str] = []
    foreign = {n: m for n, m in facts.messages.items()
               if n in messages and not m.text.startswith(MESSAGE_MARK)}
    for number, found in sorted(foreign.items()):
        problems.append(f"message {number} holds another application's text, which relq never "
                        f"overwrites: {found.text!r}; free the number or ask relq's maintainers "
                        f"about its range")
    to_write = sorted(n for n, m in messages.items() if n not in foreign and facts.messages.get(n) != m)
    if to_write and not (facts.sysadmin or facts.serveradmin):
        problems.append(f"login {facts.login} may not register messages (sp_addmessage needs sysadmin "
                        f"or serveradmin), and {len(to_write)} of relq's {len(messages)} messages are "
                        f"missing or differ ({_numbers(to_write)}): ALTER SERVER ROLE serveradmin "
                        f"ADD MEMBER [{facts.login}], or have a sysadmin {otherwise}")
    return problems, foreign, to_write


def _rights(facts: Facts) -> list[str]:
    """What stops this login deploying into the database, or creating it."""
    name, login = facts.database, facts.login
    if not facts.exists:
        return [] if facts.creates_databases else [
            f"login {login} may not create database {name} (CREATE ANY DATABASE): ALTER SERVER ROLE "
            f"dbcreator ADD MEMBER [{login}], or create the database and deploy into it"]
    if facts.state != "ONLINE":
        return [f"database {name} is {facts.state}, not ONLINE: bring it online, then deploy"]
    if facts.refused is not None:
        return [f"database {name} may not be entered (error {facts.refused}; a secondary replica that is "
                f"not readable, say): deploy to the primary"]
    problems = []
    if facts.read_only:
        problems.append(f"database {name} is read-only (READ_ONLY, or a readable secondary): deploy to "
                        f"the primary, or ALTER DATABASE [{name}] SET READ_WRITE")
    if not facts.controls_database:
        problems.append(f"login {login} does not control database {name} (the deploy creates a schema, "
                        f"tables, procedures and roles, and grants on them): in it, ALTER ROLE db_owner "
                        f"ADD MEMBER <the login's user>, or have a db_owner deploy")
    return problems


def _engine(facts: Facts | Server) -> list[str]:
    edition = facts.engine_edition
    if edition == AZURE_SQL_DATABASE:
        return ["Azure SQL Database is not supported: it has no sp_addmessage, and relq's procedures "
                "raise registered messages; use Azure SQL Managed Instance or SQL Server 2017 or later"]
    if edition in OTHER_ENGINES:
        return [f"{OTHER_ENGINES[edition]} is not supported: relq needs SQL Server 2017 or later, or "
                f"Azure SQL Managed Instance"]
    if edition in SQL_SERVER_EDITIONS and _major(facts.product_version) < MIN_MAJOR_VERSION:
        return [f"SQL Server {facts.product_version} is older than SQL Server 2017 (14.x), the "
                f"oldest relq supports: upgrade the server"]
    if edition not in SQL_SERVER_EDITIONS and edition != MANAGED_INSTANCE:
        return [f"engine edition {edition} is unknown to relq: it supports SQL Server 2017 or later "
                f"and Azure SQL Managed Instance"]
    return []


def _engine_name(facts: Facts | Server) -> str:
    if facts.engine_edition == MANAGED_INSTANCE:
        return "Azure SQL Managed Instance"
    if facts.engine_edition == AZURE_SQL_DATABASE:
        return "Azure SQL Database"
    return OTHER_ENGINES.get(facts.engine_edition, "SQL Server")


def _major(version: str) -> int:
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else 0


def _flag(value) -> bool | None:
    return None if value is None else bool(value)


def _numbers(numbers: list[int]) -> str:
    shown = ", ".join(map(str, numbers[:5]))
    return shown + (f" and {len(numbers) - 5} more" if len(numbers) > 5 else "")
