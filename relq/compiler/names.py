"""SQL Server names: how an identifier is spelt, compared and looked up.

Identifiers compare case-insensitively (the default collation of a database
created for relq); brackets and double quotes are quoting, not part of the name.
"""

from __future__ import annotations

DEFAULT_SCHEMA = "dbo"

# Schemas whose objects belong to SQL Server or to tSQLt, never to this project.
EXTERNAL_SCHEMAS = frozenset({"sys", "information_schema", "tsqlt"})

BUILTIN_TYPES = frozenset((
    "bigint", "int", "smallint", "tinyint", "bit", "decimal", "numeric", "money", "smallmoney",
    "float", "real", "date", "datetime2", "datetime", "datetimeoffset", "smalldatetime", "time",
    "char", "varchar", "text", "nchar", "nvarchar", "ntext", "binary", "varbinary", "image",
    "cursor", "rowversion", "timestamp", "hierarchyid", "uniqueidentifier", "sql_variant", "xml",
    "table", "geography", "geometry", "sysname", "json", "vector",
))


def unquote(part: str) -> str:
    """``[Status]`` -> ``Status``; ``"Status"`` -> ``Status``; ``]]`` -> ``]``."""
    if len(part) >= 2 and part[0] == "[" and part[-1] == "]":
        return part[1:-1].replace("]]", "]")
    if len(part) >= 2 and part[0] == '"' and part[-1] == '"':
        return part[1:-1].replace('""', '"')
    return part


def qualify(parts: list[str]) -> str:
    """Join name parts, adding the default schema to a one-part name."""
    parts = [unquote(p) for p in parts]
    if len(parts) == 1:
        parts = [DEFAULT_SCHEMA, parts[0]]
    return ".".join(parts)


def quote(name: str) -> str:
    """dbo.Job -> [dbo].[Job]"""
    return ".".join("[" + part.strip("[]").replace("]", "]]") + "]" for part in name.split("."))


def key(name: str) -> str:
    """The lookup key of a (qualified) name."""
    return name.casefold()


def local_name(name: str) -> str:
    return name.split(".")[-1]


def is_external(name: str) -> bool:
    """Objects of SQL Server itself, of tSQLt, or of another database."""
    parts = name.split(".")
    if len(parts) > 2:  # database.schema.object: outside this project
        return True
    return parts[0].casefold() in EXTERNAL_SCHEMAS


def is_system_procedure(name: str) -> bool:
    """``sp_*``/``xp_*`` resolve to master's system procedures, in any schema."""
    return local_name(name).casefold().startswith(("sp_", "xp_"))
