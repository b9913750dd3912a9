"""The deploy order, computed from the references between files.

Kahn's algorithm over the file graph; among the files that are ready, the one
of the earliest kind (types, messages, tables, ...) goes first, then by path,
so the order is deterministic and a reference can pull a file ahead of its
kind: a function a CHECK constraint calls deploys before the table.
"""

from __future__ import annotations

import heapq
import itertools

from relq.compiler.catalog import Catalog
from relq.compiler.diagnostics import Diagnostic
from relq.compiler.facts import FileFacts
from relq.compiler.layout import KIND_RANK, MIGRATION_NAME

# reference kind -> (catalog namespace, the kinds of object it may resolve to)
_RESOLVES_TO = {
    "table": ("object", ("table", "view", "function")),
    "column": ("object", ("table", "view")),
    "function": ("object", ("function",)),
    "procedure": ("object", ("procedure",)),
    "object": ("object", ("table", "view", "function", "procedure")),
}


def dependencies(files: list[FileFacts], catalog: Catalog) -> dict[str, set[str]]:
    """path -> the paths of the files it needs deployed first."""
    deps: dict[str, set[str]] = {f.path: set() for f in files}
    for f in files:
        for ref in f.references:
            space, kinds = _RESOLVES_TO.get(ref.kind, (ref.kind, (ref.kind,)))
            entry = catalog.lookup(space, ref.name)
            # Only a reference that resolves makes an edge: a wrong one is
            # reported by name resolution, not as a cycle it would invent.
            if entry is not None and entry.kind in kinds and entry.path != f.path:
                deps[f.path].add(entry.path)
        for d in f.definitions:
            for c in d.constraints:
                target = catalog.lookup("object", c.ref_table) if c.ref_table else None
                if target is not None and target.path != f.path and target.path in deps:
                    deps[f.path].add(target.path)
    migrations = sorted(p for p in deps if MIGRATION_NAME.match(p.rsplit("/", 1)[-1]))
    for earlier, later in itertools.pairwise(migrations):
        deps[later].add(earlier)
    return deps


def deploy_order(deps: dict[str, set[str]]) -> tuple[list[str], list[Diagnostic]]:
    def rank(path: str) -> tuple[int, str]:
        return KIND_RANK.get(path.split("/")[1], len(KIND_RANK)), path

    waiting = {p: set(d) for p, d in deps.items()}
    users: dict[str, set[str]] = {p: set() for p in deps}
    for p, needed in deps.items():
        for n in needed:
            users[n].add(p)
    ready = [rank(p) for p, needed in waiting.items() if not needed]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        _, path = heapq.heappop(ready)
        order.append(path)
        for user in sorted(users[path]):
            waiting[user].discard(path)
            if not waiting[user]:
                heapq.heappush(ready, rank(user))
    stuck = {p for p, needed in waiting.items() if needed}
    if not stuck:
        return order, []
    cycle = _find_cycle(stuck, deps)
    return order, [Diagnostic(cycle[0], 1, "cycle",
                              "these files need each other, so no deploy order exists: "
                              + " -> ".join(cycle))]


def _find_cycle(stuck: set[str], deps: dict[str, set[str]]) -> list[str]:
    path: list[str] = []
    seen: set[str] = set()
    node = min(stuck)
    while node not in seen:
        seen.add(node)
        path.append(node)
        node = min(n for n in deps[node] if n in stuck)
    cycle = path[path.index(node):]
    start = cycle.index(min(cycle))  # the same cycle reads the same, whichever node found it
    cycle = cycle[start:] + cycle[:start]
    return [*cycle, cycle[0]]
