"""`invoke build`: the offline compiler of the database project.

sources -> facts per file (parsed, or from the cache) -> catalog -> name
resolution and conventions -> deploy order -> dist/deploy.sql, manifest.json.
It never talks to a server.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from relq.compiler import cache, conventions, coverage, emit, resolve
from relq.compiler.catalog import Catalog, build_catalog, checks_calling
from relq.compiler.diagnostics import Diagnostic, apply_allows
from relq.compiler.extract import Extractor
from relq.compiler.facts import Definition, FileFacts
from relq.compiler.layout import Source, discover
from relq.compiler.messages import message_files
from relq.compiler.order import dependencies, deploy_order
from relq.compiler.parse import parse
from relq.progress import OnFile, map_files

KNOWN_CHECKS = set(conventions.CHECKS) | set(resolve.CHECKS) | set(coverage.CHECKS)


@dataclass
class BuildResult:
    diagnostics: list[Diagnostic]
    order: list[str] = field(default_factory=list)  # database/ files in deploy order
    files: int = 0
    parsed: int = 0
    seconds: float = 0.0
    wrote: list[Path] = field(default_factory=list)
    sources: dict[str, Source] = field(default_factory=dict)  # every file, by path
    facts: dict[str, FileFacts] = field(default_factory=dict)
    catalog: Catalog = field(default_factory=Catalog)  # the objects of database/

    @property
    def ok(self) -> bool:
        return not self.diagnostics


def analyse_file(root: Path, source: Source) -> FileFacts:
    """Parse one file and extract its facts and convention findings."""
    facts = FileFacts(source.path, source.checksum)
    tree, error = parse(root, source.path, source.text)
    if tree is None:
        facts.parse_error = error
        facts.definitions = placeholder(source)
        return facts
    extractor = Extractor(tree, source.text)
    extractor.run()
    facts.definitions = extractor.definitions
    facts.references = extractor.references
    facts.allows = extractor.allows
    facts.findings = conventions.findings(source, tree, extractor.definitions, extractor.references)
    return facts


def placeholder(source: Source) -> list[Definition]:
    """What an unparsable file is named to create, so that its one parse error
    is not echoed as an unknown name by every file that uses the object."""
    kind = {"types": "type", "tables": "table", "functions": "function", "views": "view",
            "procedures": "procedure"}.get(source.folder)
    if kind is None or source.stem.count(".") != 1:
        return []
    return [Definition(kind, source.stem, 1, opaque=True, view_columns_known=False)]


def _facts(root: Path, sources: list[Source], on_parsed: OnFile | None) -> tuple[list[FileFacts], int]:
    cached = cache.load(root)
    todo = [s for s in sources if s.path not in cached or cached[s.path].checksum != s.checksum]
    fresh = {facts.path: facts for facts in map_files(analyse_file, root, todo, on_parsed,
                                                       lambda source: source.path)}
    facts = [fresh.get(s.path) or cached[s.path] for s in sources]
    cache.store(root, facts)
    return facts, len(todo)


def message_facts(root: Path) -> dict[str, FileFacts]:
    """The facts of database/messages alone, from the parse cache where it holds them: what
    the preflight needs (`invoke deploy --check`), without parsing the rest of the project.
    The cache is read, never written: it keeps every file's facts, not these alone."""
    cached = cache.load(root)
    sources = [s for s in discover(root)[0] if s.folder == "messages"]
    return {s.path: cached[s.path] if s.path in cached and cached[s.path].checksum == s.checksum
            else analyse_file(root, s) for s in sources}


def build(root: Path, write: bool = True, on_parsed: OnFile | None = None) -> BuildResult:
    """Check the project under ``root`` and, when it is clean, write dist/;
    ``on_parsed`` hears of each file parsed (the files the cache does not hold)."""
    started = time.perf_counter()
    sources, strays = discover(root)
    facts, parsed = _facts(root, sources, on_parsed)
    problems = [
        Diagnostic(p, 1, "layout", "this file is outside the layout: put it in a kind's folder "
                                   "under database/ (types, tables, ...) or in tests_tsqlt/")
        for p in strays
    ]
    for f in facts:
        if f.parse_error is not None:
            problems.append(Diagnostic(f.path, f.parse_error.line, "parse", f.parse_error.message))
        problems += [Diagnostic(f.path, x.line, x.check, x.message) for x in f.findings]
    by_path = {s.path: s for s in sources}
    database = [f for f in facts if not by_path[f.path].is_test]
    tests = [f for f in facts if by_path[f.path].is_test]
    catalog, duplicates = build_catalog(database)
    with_tests = catalog.extended(tests, duplicates)
    problems += duplicates
    problems += resolve.resolve(database, catalog)
    problems += resolve.resolve(tests, with_tests)
    problems += coverage.missing_test_classes(database, tests)
    deps = dependencies(database, catalog)
    order, cycles = deploy_order(deps)
    problems += cycles
    diagnostics = apply_allows(problems, facts, KNOWN_CHECKS)
    result = BuildResult(diagnostics, order, len(sources), parsed, sources=by_path,
                         facts={f.path: f for f in facts}, catalog=catalog)
    dist = root / "dist"
    outputs = [dist / "deploy.sql", dist / "manifest.json"]
    if result.ok and write:
        checks = {p: checks_calling(catalog, tuple(d.name for d in result.facts[p].definitions
                                                    if d.kind == "function"))
                  for p in order}
        script = emit.deploy_script(order, by_path, checks, message_files(result.facts))
        emit.write(dist, script, emit.manifest(order, database, deps, catalog, script))
        result.wrote = outputs
    elif not result.ok:
        for stale in outputs:  # never leave a script behind that does not match the sources
            stale.unlink(missing_ok=True)
    result.seconds = time.perf_counter() - started
    return result
