"""What a queue must be for the templates to make objects SQL Server and the house
style take: the rules its catalogue entry, or `invoke new-queue`'s arguments, meet."""

from __future__ import annotations

from relq.errors import RelqError
from relq.scaffold.columns import SQL_TYPE, out_of_range
from relq.scaffold.names import (
    ALIAS,
    BASE_COLUMNS,
    CHANNEL_NOUN,
    COLUMN_NAME,
    IDENTIFIER,
    JOIN_NAME_ROOM,
    PREFIX,
    QUEUE_NAME,
    TEST_TYPES,
    TYPE_NAME,
    WORDS,
    reserved,
)
from relq.scaffold.queue import SHAPES, Queue
from relq.scaffold.render import taken_aliases


def check_unique(queues: list[Queue], where: str) -> None:
    """No two queues share a name (in any case: SQL Server compares names without it) or
    a settings prefix (their dbo.AppSettings rows would be the same)."""
    names, prefixes = [q.name.casefold() for q in queues], [q.prefix for q in queues]
    for what, values in (("name", names), ("prefix", prefixes)):
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise RelqError(f"{where}: two queues have the {what} {twice[0]}")


def check(queue: Queue, where: str) -> None:
    """A RelqError, after ``where``, naming every rule ``queue`` breaks."""
    problems = []
    if not QUEUE_NAME.fullmatch(queue.name):
        problems.append("its name is PascalCase, 2 to 14 letters and digits")
    elif queue.name.upper() in reserved():
        problems.append(f"{queue.name} is a T-SQL reserved word")
    if not PREFIX.fullmatch(queue.prefix):
        problems.append("its prefix is lower-case letters and digits")
    if not ALIAS.fullmatch(queue.alias) or queue.alias in taken_aliases(queue.shape):
        problems.append(f"its alias is one lower-case letter the templates do not use themselves "
                        f"({', '.join(sorted(taken_aliases(queue.shape)))})")
    if queue.shape not in SHAPES:
        problems.append(f"its shape is one of {', '.join(SHAPES)}")
    if len(queue.verb) != 2 or not all(WORDS.fullmatch(w) for w in (queue.noun, *queue.verb)):
        problems.append("its noun and verb pair are lower-case words, 20 characters at most")
    if queue.shape == "job" and not queue.types:
        problems.append("a job queue lists its job types (one or more)")
    if len({t.casefold() for t in queue.types}) != len(queue.types):
        problems.append("its job types differ in more than case (SQL Server compares them without)")
    bad = [t for t in queue.types if not TYPE_NAME.fullmatch(t)]
    if bad:
        problems.append(f"job types are 1 to 50 letters, digits and _ (not {', '.join(map(repr, bad))})")
    if queue.shape == "custom" and not queue.types:
        problems.append("a custom queue names a job type of its own for the tSQLt classes' items")
    problems += _join_problems(queue)
    if set(map(str.casefold, TEST_TYPES)) & {t.casefold() for t in queue.types}:
        problems.append(f"{' and '.join(TEST_TYPES)} are the tSQLt classes' own job types")
    problems += _subtype_problems(queue)
    if problems:
        raise RelqError(f"{where}: " + "; ".join(problems))


def _join_problems(queue: Queue) -> list[str]:
    if queue.joins and queue.shape != "custom":
        return ["[[queue.join]] names a custom queue's tables (a job queue's come from [[queue.subtype]])"]
    problems = []
    own = {f"{queue.name}{suffix}".casefold() for suffix in ("", "Attempt", "Archive", "Type")}
    tables = [j.table.casefold() for j in queue.joins]
    if not all(IDENTIFIER.fullmatch(j.table) for j in queue.joins) or len(set(tables) | own) != len(
            tables) + len(own):
        problems.append("[[queue.join]] names each table its worker view joins once, by name "
                        "(not the queue's own)")
    seen = {c.casefold() for c in BASE_COLUMNS}
    for join in queue.joins:
        where = f"join {join.table}"
        if join.channel and not (join.table.startswith(f"{queue.name}_")
                                 and COLUMN_NAME.fullmatch(join.table.removeprefix(f"{queue.name}_"))):
            problems.append(f"{where}: a channel's table is {queue.name}_<Channel>, the channel PascalCase")
        if not join.columns:
            problems.append(f"{where}: lists no column")
        channel = join.table.removeprefix(f"{queue.name}_")  # the channel's name, for a channel
        if len(queue.name) + len(channel) > JOIN_NAME_ROOM:  # Worker_<Queue>_VTests names a test after it
            problems.append(f"{where}: at most {JOIN_NAME_ROOM - len(queue.name)} characters after "
                            f"{queue.name}_, so that the worker view's tSQLt test names stay within 128")
        if join.noun and not (join.channel and CHANNEL_NOUN.fullmatch(join.noun)):
            problems.append(f"{where}: a channel's noun is 1 to 20 letters, spaces and hyphens "
                            f"(what the comments call it: \"e-mail\"), not {join.noun!r}")
        for column in join.columns:
            if column.null or not SQL_TYPE.fullmatch(column.type) or out_of_range(column.type):
                problems.append(f"{where}: column {column.name}'s type {column.type!r} is not one the "
                                f"templates take (dbo.<alias type>, NVARCHAR(n), INT, ...; no NULL: "
                                f"the archive's are)")
        names = [c.name for c in join.columns]
        for column in names + ([f"{channel}Response", f"{channel}Error"] if join.channel else []):
            if not COLUMN_NAME.fullmatch(column) or column.upper() in reserved():
                problems.append(f"{where}: column {column!r} is PascalCase, 1 to 30 letters and digits, "
                                f"not a reserved word")
            elif column.casefold() in seen:  # the view and the archive hold them side by side
                problems.append(f"{where}: column {column} is taken (by the queue or another join)")
            seen.add(column.casefold())
    return problems


def _subtype_problems(queue: Queue) -> list[str]:
    if queue.subtypes and queue.shape != "job":
        return ["only a job queue takes subtypes from the templates"]
    problems = []
    seen_types: set[str] = set()
    seen_columns = {c.casefold() for c in BASE_COLUMNS}
    for subtype in queue.subtypes:
        where = f"subtype {subtype.type}"
        if subtype.type not in queue.types:
            problems.append(f"{where}: not one of the queue's job types (spelt as there)")
        if subtype.type.casefold() == "istype_fn":  # dbo.<Queue>_IsType_fn is the function's name
            problems.append(f"{where}: a subtype's table would take the name of dbo.{queue.name}_IsType_fn")
        if subtype.type.casefold() in seen_types:
            problems.append(f"{where}: a job type has one subtype")
        seen_types.add(subtype.type.casefold())
        if not subtype.columns:
            problems.append(f"{where}: lists no column")
        for column in subtype.columns:
            if not COLUMN_NAME.fullmatch(column.name):
                problems.append(f"{where}: column {column.name!r} is PascalCase, 1 to 30 letters and digits")
            elif column.name.upper() in reserved():
                problems.append(f"{where}: column {column.name} is a T-SQL reserved word")
            elif column.name.casefold() in seen_columns:
                # the list type, the worker view and the archive hold every subtype's columns side by side
                problems.append(f"{where}: column {column.name} is taken (by the queue or another subtype)")
            seen_columns.add(column.name.casefold())
            if not SQL_TYPE.fullmatch(column.type):
                problems.append(f"{where}: column {column.name}'s type {column.type!r} is not one the "
                                f"templates take (dbo.<alias type>, NVARCHAR(n), INT, DECIMAL(p, s), ...)")
            elif why := out_of_range(column.type):
                problems.append(f"{where}: column {column.name}'s type {column.type}: {why}")
    return problems
