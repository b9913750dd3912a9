"""Every procedure under database/procedures is called by a live test (tests/live), or
is exempt with a reason. tSQLt fakes the tables, so only the live tier sees locks,
real constraints and what a client gets back; a procedure no live test calls is one
whose behaviour against a real server nobody checks.

A live test calls a procedure when it names it in full, ``dbo.<Name>``, in a string of
its code (docstrings and comments do not count): the argument of ``db.call``, or a
batch that EXECs it. A name built from pieces (``f"dbo.{action}_Notification_trx"``)
would escape this reading, so live tests may not build one. A procedure called that
way also runs the ``_utx`` procedures it EXECs, as the build's catalogue records them
(``relq.compiler``'s references), and those count as called too. Procedures that relq's
modules call (the worker, the pipeline) count only where a live test names them.

What this reading cannot tell: a name in a call that is expected to fail (a role's
refusal, ``pytest.raises``) counts as a call, and so does a ``_utx`` that its caller
EXECs only on some path. Reviewers keep one call per procedure that asserts its effect."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from relq.compiler import BuildResult, build
from relq.compiler.names import key
from tests.conftest import REPO

LIVE = REPO / "tests" / "live"
PROCEDURES = "database/procedures/"
NAME = re.compile(r"\bdbo\.\[?(\w+)\b(?!\{)")  # a whole name: not the head of dbo.Send_{kind}
# dbo.{...} or {...}_trx: a procedure's name made of pieces, whatever fills them.
BUILT = re.compile(r"dbo\.\w*\{[^{}]*\}|\{[^{}]*\}\w*_(?:trx|utx)\b")

# Procedures no live test calls, each with why: "dbo.Name": "reason".
EXEMPT: dict[str, str] = {}


@pytest.fixture(scope="module")
def repo_build() -> BuildResult:
    result = build(REPO, write=False)
    assert result.ok, [str(d) for d in result.diagnostics]
    return result


def strings(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """The strings of a module's code, with their lines: constants, and f-strings with
    ``{...}`` for each placeholder; docstrings left out."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))
        elif isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = (v.value if isinstance(v, ast.Constant) else "{...}" for v in node.values)
            yield node.lineno, "".join(parts)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node.lineno, node.value


def named(source: str, where: str) -> dict[str, str]:
    """The ``dbo.`` names in ``source``'s code strings: key -> where (first place)."""
    found: dict[str, str] = {}
    for line, text in strings(ast.parse(source)):
        for match in NAME.finditer(text):
            found.setdefault(key(f"dbo.{match[1]}"), f"{where}:{line}")
    return found


def built(source: str, where: str) -> list[str]:
    """Where ``source`` builds a procedure's name from pieces."""
    return [f"{where}:{line}: {match[0]}" for line, text in strings(ast.parse(source))
            for match in BUILT.finditer(text)]


def live_sources() -> list[tuple[str, str]]:
    return [(file.relative_to(REPO).as_posix(), file.read_text(encoding="utf-8"))
            for file in sorted(LIVE.glob("*.py"))]


def procedure_calls(result: BuildResult) -> dict[str, tuple[str, set[str]]]:
    """Each procedure of database/procedures: key -> (its name, the keys of what it EXECs)."""
    calls = {}
    for path, facts in result.facts.items():
        if not path.startswith(PROCEDURES):
            continue
        callees = {key(r.name) for r in facts.references if r.kind == "procedure" and not r.by_name}
        for d in facts.definitions:
            if d.kind == "procedure":
                calls[key(d.name)] = (d.name, callees)
    return calls


def covered(calls: dict[str, tuple[str, set[str]]], sources: list[tuple[str, str]]) -> dict[str, str]:
    """The procedures the live tests call: key -> why (where a test names it, or which
    called procedure EXECs it)."""
    why = {}
    for where, source in sources:
        for name, place in named(source, where).items():
            if name in calls:
                why.setdefault(name, f"named at {place}")
    todo = list(why)
    while todo:
        caller = todo.pop()
        for callee in calls[caller][1]:
            # a _utx runs in its caller's transaction; a _trx would refuse to run inside one
            if callee in calls and callee.endswith("_utx") and callee not in why:
                why[callee] = f"EXECed by {calls[caller][0]}"
                todo.append(callee)
    return why


def test_every_procedure_is_called_by_a_live_test_or_exempt(repo_build: BuildResult) -> None:
    calls = procedure_calls(repo_build)
    assert len(calls) == len(list((REPO / PROCEDURES).glob("*.sql")))  # one procedure a file, all read
    why = covered(calls, live_sources())
    exempt = {key(name) for name in EXEMPT}
    missing = sorted(name for k, (name, _) in calls.items() if k not in why and k not in exempt)
    assert missing == [], (f"no live test (tests/live) calls {', '.join(missing)}: call each for real and "
                           f"assert its effect, or add it to EXEMPT in {Path(__file__).name} with why")


def test_every_exemption_is_a_procedure_no_live_test_calls_and_says_why(repo_build: BuildResult) -> None:
    calls = procedure_calls(repo_build)
    why = covered(calls, live_sources())
    for name, reason in EXEMPT.items():
        assert key(name) in calls, f"{name} is exempt but is no procedure of {PROCEDURES}"
        assert key(name) not in why, f"{name} is exempt but a live test calls it ({why[key(name)]})"
        assert reason.strip(), f"{name} is exempt without a reason"


def test_live_tests_name_every_procedure_in_full() -> None:
    found = [place for where, source in live_sources() for place in built(source, where)]
    assert found == [], "a procedure's name is built from pieces, so no one can see which it calls: " \
                        "name it in full (parametrize over full names)\n" + "\n".join(found)


SAMPLE = '''
"""Calls dbo.InTheModuleDocstring_trx."""
SQL = "EXEC dbo.Add_Thing_trx @Items = @Items;"  # and dbo.InAComment_trx


def test_x(conn, action):
    """Not dbo.InADocstring_trx either."""
    db.call(conn, "dbo.[Next_Thing_trx]")
    db.call(conn, f"dbo.{action}_Thing_trx")
    db.call(conn, f"dbo.Pause_{action}")
    db.run(conn, "EXEC dbo.Send_{kind}_trx;".format(kind=action))
'''


def test_only_names_in_code_strings_count_and_built_names_are_found() -> None:
    assert named(SAMPLE, "sample.py") == {"dbo.add_thing_trx": "sample.py:3",
                                          "dbo.next_thing_trx": "sample.py:8"}
    assert built(SAMPLE, "sample.py") == ["sample.py:9: dbo.{...}", "sample.py:10: dbo.Pause_{...}",
                                          "sample.py:11: dbo.Send_{kind}"]


def test_a_covered_procedure_covers_the_utx_procedures_it_execs_and_no_others() -> None:
    calls = {"dbo.a_trx": ("dbo.A_trx", {"dbo.b_utx", "dbo.c_trx"}),
             "dbo.b_utx": ("dbo.B_utx", {"dbo.d_utx"}),
             "dbo.c_trx": ("dbo.C_trx", set()),
             "dbo.d_utx": ("dbo.D_utx", set()),
             "dbo.e_utx": ("dbo.E_utx", set())}
    why = covered(calls, [("t.py", 'CALL = "dbo.A_trx"\n')])
    assert why == {"dbo.a_trx": "named at t.py:1", "dbo.b_utx": "EXECed by dbo.A_trx",
                   "dbo.d_utx": "EXECed by dbo.B_utx"}
