"""A queue as its catalogue entry describes it, and the variables its templates get."""

from __future__ import annotations

from dataclasses import dataclass

from relq.scaffold.columns import Column
from relq.scaffold.names import TEST_TYPES
from relq.scaffold.subtypes import Subtype

SHAPES = ("job", "custom")


@dataclass(frozen=True)
class Join:
    """A custom queue's table written by hand that its worker view joins on the item's key
    (a subtype, or a delivery channel): the columns the view shows of it, which its
    archive keeps too. A channel (dbo.<Queue>_<Channel>) also has Response and Error,
    its own delivery result: the view shows them as <Channel>Response and <Channel>Error,
    and Modify_ records them (@<Channel>Response, @<Channel>Error)."""

    table: str
    columns: tuple[Column, ...]  # their types are the hand-written table's (the archive has them)
    channel: bool = False
    noun: str = ""  # what the comments call a channel ("e-mail"; default: its name)


@dataclass(frozen=True)
class Queue:
    name: str  # SyncQueue
    prefix: str  # its settings' prefix in dbo.AppSettings: syncqueue
    alias: str  # the table alias its procedures use: q
    shape: str = "job"
    noun: str = "job"  # words for the comments: "sync job"
    verb: tuple[str, str] = ("process", "processed")
    types: tuple[str, ...] = ()
    subtypes: tuple[Subtype, ...] = ()
    # A custom queue's tables that its worker view joins (its subtypes and channels). The
    # templated tSQLt classes fake them with the queue; the purge deletes their rows first.
    joins: tuple[Join, ...] = ()
    # The migrations that brought the queue's tables and types to their present definition
    # in databases deployed before them ("V0001"): their comments name them. A new queue
    # has none, and its files mention none.
    history: tuple[str, ...] = ()

    @property
    def typed_tables(self) -> list[dict[str, str]]:
        """The job types that have an exclusive subtype table: {"type", "table"}."""
        tables = ({f"{self.name}_{s.type}" for s in self.subtypes}
                  | {j.table for j in self.joins if not j.channel})
        return [{"type": t, "table": f"{self.name}_{t}"} for t in self.types if f"{self.name}_{t}" in tables]

    def variables(self) -> dict[str, object]:
        subtypes = [{"type": s.type, "table": f"{self.name}_{s.type}", "alias": f"s{n}",
                     "columns": [dict(vars(c), sample=c.sample) for c in s.columns]}
                    for n, s in enumerate(self.subtypes, 1)]
        # The tables the worker view joins, as (table, alias, its columns there as
        # (expression, name)) and a channel's name: a job queue's subtypes, or a custom
        # queue's joins. The view, the purge's archive copy and Modify_ read these.
        joined = [{"table": s["table"], "alias": s["alias"], "channel": None,
                   "columns": [(f"{s['alias']}.{c['name']}", c["name"]) for c in s["columns"]]}
                  for s in subtypes]
        for n, join in enumerate(self.joins, 1):
            alias, channel = f"s{n}", join.table.removeprefix(f"{self.name}_") if join.channel else None
            result = [(f"{alias}.{c}", f"{channel}{c}") for c in ("Response", "Error")] if channel else []
            joined.append({"table": join.table, "alias": alias, "channel": channel,
                           "noun": join.noun or channel,
                           "columns": [(f"{alias}.{c.name}", c.name) for c in join.columns] + result})
        # The same columns by their name in the view, with their types, in the view's order: a
        # subtype's, a join's, and a channel's result (a dbo.WebResponse, an NVARCHAR(MAX), as
        # Modify_'s parameters). The archive keeps each of them (NULL where an item has none).
        shown = [c for s in self.subtypes for c in s.columns]
        for join in self.joins:
            channel = join.table.removeprefix(f"{self.name}_")
            shown += [*join.columns, *(Column(f"{channel}{r}", "dbo.WebResponse", base="NVARCHAR(MAX)")
                                       for r in ("Response", "Error") if join.channel)]
        return {"Queue": self.name, "prefix": self.prefix, "a": self.alias, "noun": self.noun,
                "history": list(self.history),
                "nouns": self.noun + "s", "verb": self.verb[0], "verbed": self.verb[1],
                "types": list(self.types), "subtypes": subtypes, "test_types": list(TEST_TYPES),
                "entity": self.shape == "job",  # EntityKey and Payload: a job queue's columns
                "joined": joined, "view_tables": [j["table"] for j in joined],
                "archived_columns": [f"{c.name} {c.type}" for c in shown],
                "joined_columns": [c.name for c in shown],
                # a value for each of them in the tSQLt classes, by that name: of its type, and
                # each column's its own (the n-th, in the view's order), so that a column mapped
                # to another one shows
                "joined_values": {c.name: c.value(n) for n, c in enumerate(shown, 1)},
                "channels": [j for j in joined if j["channel"]],
                # the job types with a table of their own (dbo.<Queue>_<Type>, whose CHECK asks
                # dbo.<Queue>_IsType_fn): a job queue's subtypes, a custom queue's joins so named
                "typed_tables": self.typed_tables,
                # a custom queue whose every type has one: its type table's comment says so
                "each_type_typed": self.shape == "custom" and len(self.typed_tables) == len(self.types),
                # every subtype's columns, in catalogue order, with the subtype they belong to
                "subtype_columns": [dict(c, subtype=s) for s in subtypes for c in s["columns"]]}
