"""Every procedure, function and view of database/ has its tSQLt class
(CONTRIBUTING.md: one test class per object under test)."""

from __future__ import annotations

from relq.compiler.diagnostics import Diagnostic
from relq.compiler.facts import FileFacts
from relq.compiler.layout import TESTS
from relq.compiler.names import local_name

TESTED_KINDS = ("procedure", "function", "view")
CHECKS = {"test-class": "a procedure, function or view without its tSQLt class in tests_tsqlt/"}


def missing_test_classes(database: list[FileFacts], tests: list[FileFacts]) -> list[Diagnostic]:
    classes = {f.path.rsplit("/", 1)[-1].casefold() for f in tests}
    problems = []
    for f in database:
        for d in f.definitions:
            if d.kind not in TESTED_KINDS or d.opaque:
                continue
            expected = f"{local_name(d.name)}Tests.class.sql"
            if expected.casefold() not in classes:
                problems.append(Diagnostic(f.path, d.line, "test-class",
                                           f"{d.kind} {d.name} has no tSQLt class: add "
                                           f"{TESTS}/{expected}"))
    return problems
