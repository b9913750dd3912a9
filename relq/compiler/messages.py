"""relq's error messages on a server that other applications share.

Message numbers are server-wide (sys.messages: "message_id ... is unique across
server", https://learn.microsoft.com/sql/relational-databases/system-catalog-views/messages-for-errors-catalog-views-sys-messages),
so a plain ``sp_addmessage @replace = 'replace'`` would rewrite another application's
message with the same number. relq's texts begin with a mark; deploy registers a
message only where its number is free or holds a marked text, and stops where it
holds anyone else's. A message already registered as the project has it is left
alone, so a login without serveradmin can deploy another database on the server
once relq's messages are there (sp_addmessage "Requires membership in the sysadmin
or serveradmin fixed server roles",
https://learn.microsoft.com/sql/relational-databases/system-stored-procedures/sp-addmessage-transact-sql).
"""

from __future__ import annotations

from collections.abc import Mapping

from relq.compiler.facts import Definition, FileFacts

MESSAGE_MARK = "relq: "  # every relq message text begins with it
US_ENGLISH = 1033  # sys.messages.language_id of @lang = 'us_english'


def message_files(facts: Mapping[str, FileFacts]) -> dict[str, Definition]:
    """Each message file (path) and the message it registers, from the build's facts."""
    return {path: d for path, f in facts.items() for d in f.definitions if d.kind == "message"}


def register_sql(message: Definition) -> str:
    """The batch that registers ``message`` (a ``message`` definition of the build, its
    severity and text literals checked by the build) without overwriting another
    application's. ``invoke deploy`` and dist/deploy.sql both run it in place of the
    message file. The mark is compared byte for byte, as the preflight compares it."""
    number, severity, text = int(message.name), message.severity, message.text
    literal = "N'" + (text or "").replace("'", "''") + "'"
    return f"""DECLARE @Found NVARCHAR(2048), @FoundSeverity INT;
SELECT @Found = m.[text], @FoundSeverity = m.severity
FROM sys.messages AS m
WHERE m.message_id = {number} AND m.language_id = {US_ENGLISH};
IF (LEFT(@Found, {len(MESSAGE_MARK)}) <> N'{MESSAGE_MARK}' COLLATE Latin1_General_BIN2)
    BEGIN
        DECLARE @Why NVARCHAR(2048) = CONCAT(N'message {number} holds another application''s text, '
            + N'which relq never overwrites: ', @Found);
        THROW 50000, @Why, 1;
    END;
IF (@Found IS NULL OR @FoundSeverity <> {severity} OR @Found <> {literal} COLLATE Latin1_General_BIN2)
    BEGIN
        EXEC sys.sp_addmessage
            @msgnum = {number},
            @severity = {severity},
            @msgtext = {literal},
            @lang = 'us_english',
            @replace = 'replace';
    END;
"""
