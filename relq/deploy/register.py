"""`invoke register-messages`: relq's messages on one server, and nothing else.

Messages live in each server's master (sys.messages "is stored in master"; a database made
available on another server instance needs its user-defined messages added there with
sp_addmessage,
https://learn.microsoft.com/sql/relational-databases/databases/manage-metadata-when-making-a-database-available-on-another-server#user-defined-error-messages).
An availability group copies its databases, not master, and a restore brings no master along: on
a server that never had them, every RAISERROR of a relq number arrives as error 18054. This
registers them there without touching any database: no journal, no deploy lock, no object.

It runs the deploy's own registration batches (relq.compiler.messages.register_sql), after the
deploy's own checks of the server (relq.deploy.preflight.judge_server): another application's
text in one of relq's numbers stops it before any change, and so does a login that may not
register a message that is missing or differs (sp_addmessage "Requires membership in the
sysadmin or serveradmin fixed server roles",
https://learn.microsoft.com/sql/relational-databases/system-stored-procedures/sp-addmessage-transact-sql).
A message already as the project has it is left alone, so a second run registers nothing.

It connects to master whatever database the connection string names: every login may enter
master, and the database named may be one this replica cannot open (a secondary that is not
readable). The server's own name (SERVERPROPERTY('ServerName'),
https://learn.microsoft.com/sql/t-sql/functions/serverproperty-transact-sql) is printed, since a
connection through an availability group listener lands on the primary whichever replica was
meant (https://learn.microsoft.com/sql/database-engine/availability-groups/windows/listeners-client-connectivity-application-failover).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from relq import db
from relq.compiler import message_facts
from relq.compiler.facts import Definition
from relq.compiler.messages import message_files, register_sql
from relq.compiler.report import stderr_console
from relq.deploy import preflight
from relq.errors import RelqError


@dataclass
class Registered:
    """What `invoke register-messages` did on one server."""

    server: str  # SERVERPROPERTY('ServerName')
    added: list[int] = field(default_factory=list)  # numbers that were free
    updated: list[int] = field(default_factory=list)  # numbers that held an older relq text
    unchanged: int = 0  # already as the project has them

    def summary(self) -> str:
        return (f"register-messages done on {self.server}: {len(self.added)} registered, "
                f"{len(self.updated)} updated, {self.unchanged} already as the project has them")


def register_messages(root: Path, target: db.Target, *, console: Console | None = None) -> Registered:
    """Register the project's messages on ``target``'s server, in master, printing each one it
    registers. Raises PreflightFailed, before any change, where the deploy's preflight would stop
    for the messages; RelqError for a message file the build would refuse."""
    console = console or stderr_console()
    console.print(f"target: {target}", markup=False)
    definitions = _project(root)
    messages = {number: preflight.Message(d.severity, d.text) for number, d in definitions.items()}
    conn = db.connect(db.with_database(target.conn_str, "master"))
    try:
        cursor = conn.cursor()
        server = preflight.read_server(cursor, sorted(messages))
        verdict = preflight.judge_server(server, messages)
        console.print("preflight:")
        for text in verdict.lines():
            console.print("  " + text, markup=False)
        if not verdict.ok:
            count = len(verdict.problems)
            raise preflight.PreflightFailed(
                f"nothing registered: the preflight found {count} problem{'s' if count != 1 else ''} (above)")
        done = Registered(server.name, unchanged=len(messages) - len(verdict.to_register))
        for number in verdict.to_register:
            db.run_batch(cursor, register_sql(definitions[number]))  # autocommit: sp_addmessage writes master
            updated = number in server.messages
            (done.updated if updated else done.added).append(number)
            console.print(f"{'updated' if updated else 'registered'} {number}: {messages[number].text}",
                          markup=False)
        return done
    finally:
        conn.close()


def _project(root: Path) -> dict[int, Definition]:
    """The project's messages by number, from database/messages alone; a file the build would
    refuse (one that does not parse, a severity or text that is no literal, a text without
    relq's mark) stops the command, naming it."""
    facts = message_facts(root)
    refused = [f"{f.path}:{f.parse_error.line}: {f.parse_error.message}" for f in facts.values()
               if f.parse_error is not None]
    refused += [f"{f.path}:{x.line}: {x.message}" for f in facts.values() for x in f.findings
                if x.check == "message-mark"]
    if refused:
        raise RelqError(f"{refused[0]}: run `invoke build` and fix the project's messages first"
                        + (f" ({len(refused) - 1} more)" if len(refused) > 1 else ""))
    definitions = {int(d.name): d for d in message_files(facts).values()}
    if not definitions:
        raise RelqError(f"the project has no messages: nothing to register (database/messages under {root})")
    return definitions
