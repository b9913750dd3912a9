"""What a queue must be for the templates to make objects SQL Server and the house
style take: the rules its catalogue entry, or `invoke new-queue`'s arguments, meet."""

from __future__ import annotations

import re
from collections.abc import Sequence

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
    for n, queue in enumerate(queues):
        for other in queues[:n]:
            if queue.name == other.name:
                raise RelqError(f"{where}: the queue {queue.name} is listed twice")
            if queue.name.casefold() == other.name.casefold():
                raise RelqError(f"{where}: the queues {other.name} and {queue.name} differ only in case: "
                                f"SQL Server takes them for one name")
            if queue.prefix == other.prefix:
                raise RelqError(f"{where}: the queues {other.name} and {queue.name} have the same prefix "
                                f"{queue.prefix}: give each its own")


def check(queue: Queue, where: str, *, prefix_from_name: bool = False) -> None:
    """A RelqError, after ``where``, naming every rule ``queue`` breaks. With
    ``prefix_from_name`` its prefix is its name in lower case, right whenever the name is,
    and not the user's to mend: only the name's problems are told."""
    problems = _name_problems(queue.name)
    if not prefix_from_name and not PREFIX.fullmatch(queue.prefix):
        problems.append(f"the prefix {queue.prefix!r} is not lower-case letters and digits, as syncqueue")
    taken = taken_aliases(queue.shape)
    if not ALIAS.fullmatch(queue.alias):
        problems.append(f"the alias {queue.alias!r} is not one lower-case letter")
    elif queue.alias in taken:
        problems.append(f"the alias {queue.alias} is one the templates use themselves: take a letter "
                        f"other than {', '.join(sorted(taken))}")
    if queue.shape not in SHAPES:
        problems.append(f"the shape {queue.shape!r} is neither {' nor '.join(SHAPES)}")
    problems += _words_problems("noun", [queue.noun])
    if len(queue.verb) != 2:
        problems.append('the verb is not two words, as ["process", "processed"]')
    else:
        problems += _words_problems("verb", queue.verb)
    problems += _type_problems(queue)
    problems += _join_problems(queue)
    problems += _subtype_problems(queue)
    if problems:
        raise RelqError(f"{where}: " + "; ".join(problems))


def _name_problems(name: str) -> list[str]:
    if re.fullmatch(r"[A-Z][A-Za-z0-9]*", name) and not QUEUE_NAME.fullmatch(name):
        return [f"the name {name} has {len(name)} characters, not 2 to 14"]
    if not QUEUE_NAME.fullmatch(name):
        return [f"the name {name!r} is not PascalCase letters and digits, as InvoiceExport"]
    if name.upper() in reserved():
        return [f"the name {name} is a T-SQL reserved word"]
    return []


def _words_problems(what: str, texts: Sequence[str]) -> list[str]:
    """The noun's or the verb's: words for the comments, short enough for their lines."""
    problems = []
    for text in texts:
        if re.fullmatch(r"[a-z][a-z -]*", text) and not WORDS.fullmatch(text):
            problems.append(f"the {what} {text!r} has {len(text)} characters, more than 20")
        elif not WORDS.fullmatch(text):
            problems.append(f"the {what} {text!r} is not lower-case letters, spaces and hyphens")
    return problems


def _type_problems(queue: Queue) -> list[str]:
    if not queue.types:
        return ["no job type is given: a job queue has one or more" if queue.shape == "job" else
                "no job type is given: a custom queue names one, which its tSQLt classes' items take"]
    problems = []
    spellings: dict[str, list[str]] = {}  # SQL Server compares the types without case
    for job_type in queue.types:
        spellings.setdefault(job_type.casefold(), []).append(job_type)
    for given in (g for g in spellings.values() if len(g) > 1):
        distinct = list(dict.fromkeys(given))
        if len(distinct) == 1:
            times = "twice" if len(given) == 2 else f"{len(given)} times"
            problems.append(f"the job type {given[0]} is given {times}")
        else:
            problems.append(f"the job types {_and(distinct)} differ only in case: SQL Server takes them "
                            f"for one type")
    bad = [repr(t) for t in queue.types if not TYPE_NAME.fullmatch(t)]
    if bad:
        problems.append(f"the job type{'s' if len(bad) > 1 else ''} {_and(bad)} "
                        f"{'are' if len(bad) > 1 else 'is'} not 1 to 50 letters, digits and _, "
                        f"starting with a letter")
    own = {t.casefold(): t for t in TEST_TYPES}
    problems += [f"the job type {t} is one the tSQLt classes add themselves: pick another name"
                 for t in queue.types if t.casefold() in own]
    return problems


def _join_problems(queue: Queue) -> list[str]:
    if queue.joins and queue.shape == "job":
        return ["a job queue takes no [[queue.join]]: its subtype tables come from [[queue.subtype]]"]
    problems = []
    own = {f"{queue.name}{suffix}".casefold() for suffix in ("", "Attempt", "Archive", "Type")}
    named: set[str] = set()
    # the view and the archive hold the joins' columns beside the queue's: who has each name
    seen = {c.casefold(): f"the queue's own {c}" for c in BASE_COLUMNS}
    for join in queue.joins:
        where = f"join {join.table}"
        if not IDENTIFIER.fullmatch(join.table):
            problems.append(f"join {join.table!r}: the table is not a name of letters, digits and _ "
                            f"(give it without dbo.)")
        elif join.table.casefold() in own:
            problems.append(f"{where}: the table is the queue's own, not one written by hand")
        elif join.table.casefold() in named:
            problems.append(f"{where}: the table is joined twice")
        named.add(join.table.casefold())
        channel = join.table.removeprefix(f"{queue.name}_")  # the channel's name, for a channel
        if join.channel and not (join.table.startswith(f"{queue.name}_") and COLUMN_NAME.fullmatch(channel)):
            problems.append(f"{where}: a channel's table (channel = true) is named "
                            f"{queue.name}_<Channel>, <Channel> PascalCase, as {queue.name}_Email")
        if not join.columns:
            problems.append(f"{where}: lists no column")
        room = JOIN_NAME_ROOM - len(queue.name)
        if len(channel) > room:  # Worker_<Queue>_VTests names a test after it
            problems.append(f"{where}: {len(channel)} characters after {queue.name}_, more than the {room} "
                            f"that keep the worker view's tSQLt test names within 128")
        if join.noun and not join.channel:
            problems.append(f"{where}: a noun names a channel, and this join has no channel = true")
        elif join.noun and not CHANNEL_NOUN.fullmatch(join.noun):
            problems.append(f"{where}: the noun {join.noun!r} is not 1 to 20 letters, spaces and hyphens, "
                            f'as "e-mail"')
        for column in join.columns:
            if column.null:
                problems.append(f"{where}: column {column.name} is declared NULL: give its type alone "
                                f"(the archive's columns are NULL anyway)")
            elif not SQL_TYPE.fullmatch(column.type):
                problems.append(f"{where}: column {column.name}'s type {column.type!r} is not one the "
                                f"templates take (dbo.<alias type>, NVARCHAR(n), INT, ...)")
            elif why := out_of_range(column.type):
                problems.append(f"{where}: column {column.name}'s type {column.type}: {why}")
        results = [f"{channel}Response", f"{channel}Error"] if join.channel else []
        for column in results + [c.name for c in join.columns]:  # a result's name is the channel's
            if not COLUMN_NAME.fullmatch(column):
                origin = " (the channel's result, from its name)" if column in results else ""
                problems.append(f"{where}: column {column!r}{origin} is not PascalCase of 1 to 30 "
                                f"letters and digits")
            elif column.upper() in reserved():
                problems.append(f"{where}: column {column} is a T-SQL reserved word")
            elif column.casefold() in seen:
                problems.append(f"{where}: column {column} is taken by {seen[column.casefold()]}")
            kind = "channel result " if column in results else ""
            seen.setdefault(column.casefold(), f"{where}'s {kind}{column}")
    return problems


def _subtype_problems(queue: Queue) -> list[str]:
    if queue.subtypes and queue.shape == "custom":
        return ["a custom queue takes no [[queue.subtype]]: its subtype tables are written by hand and "
                "named in [[queue.join]]"]
    problems = []
    seen_types: set[str] = set()
    # the list type, the worker view and the archive hold every subtype's columns side by side
    seen_columns = {c.casefold(): f"the queue's own {c}" for c in BASE_COLUMNS}
    spelt = {t.casefold(): t for t in queue.types}
    for subtype in queue.subtypes:
        where = f"subtype {subtype.type}"
        if subtype.type.casefold() in spelt and subtype.type not in queue.types:
            problems.append(f"{where}: the job type is spelt {spelt[subtype.type.casefold()]}")
        elif subtype.type not in queue.types:
            problems.append(f"{where}: not one of the queue's job types ({', '.join(queue.types)})")
        if subtype.type.casefold() == "istype_fn":  # dbo.<Queue>_IsType_fn is the function's name
            problems.append(f"{where}: a subtype's table would take the name of dbo.{queue.name}_IsType_fn")
        if subtype.type.casefold() in seen_types:
            problems.append(f"{where}: given twice: give all its columns in one")
        seen_types.add(subtype.type.casefold())
        if not subtype.columns:
            problems.append(f"{where}: lists no column")
        for column in subtype.columns:
            if not COLUMN_NAME.fullmatch(column.name):
                problems.append(f"{where}: column {column.name!r} is not PascalCase of 1 to 30 letters and "
                                f"digits")
            elif column.name.upper() in reserved():
                problems.append(f"{where}: column {column.name} is a T-SQL reserved word")
            elif column.name.casefold() in seen_columns:
                problems.append(f"{where}: column {column.name} is taken by "
                                f"{seen_columns[column.name.casefold()]}")
            seen_columns.setdefault(column.name.casefold(), f"{where}'s {column.name}")
            if not SQL_TYPE.fullmatch(column.type):
                problems.append(f"{where}: column {column.name}'s type {column.type!r} is not one the "
                                f"templates take (dbo.<alias type>, NVARCHAR(n), INT, DECIMAL(p, s), ...)")
            elif why := out_of_range(column.type):
                problems.append(f"{where}: column {column.name}'s type {column.type}: {why}")
    return problems


def _and(values: Sequence[str]) -> str:
    """a, b and c"""
    return ", ".join(values[:-1]) + " and " + values[-1] if len(values) > 1 else "".join(values)
