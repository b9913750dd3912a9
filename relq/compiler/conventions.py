"""The house style (CONTRIBUTING.md) where a program can check it.

Each check is a function over one parsed file that yields findings; its name
is what a ``-- relq:allow <check> <reason>`` comment silences. CHECKS lists
them all, with the sentence docs/build.md shows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from sqlfluff.core.parser.segments.base import BaseSegment

from relq.compiler.extract import exec_args, raiserror_args
from relq.compiler.facts import Definition, Finding, Reference
from relq.compiler.layout import MIGRATION_NAME, TEST_CLASS_NAME, Source
from relq.compiler.messages import MESSAGE_MARK
from relq.compiler.names import key, local_name
from relq.compiler.tree import code, flat, line, qualified, squash, statements, walk, words

MAX_TRANSACTION_NAME = 32  # SQL Server refuses longer transaction names
MAX_IDENTIFIER = 128  # sysname: SQL Server refuses a longer name of any object
_LOCAL_TIME = ("GETDATE", "SYSDATETIME", "GETUTCDATE", "SYSDATETIMEOFFSET", "CURRENT_TIMESTAMP")
_DML = ("insert_statement", "update_statement", "delete_statement", "merge_statement")
_FOLDER_KIND = {"types": "type", "tables": "table", "functions": "function",
                "views": "view", "procedures": "procedure"}
_SUFFIX = {"function": "_fn", "view": "_V"}


@dataclass
class FileContext:
    source: Source
    tree: BaseSegment
    definitions: list[Definition]
    references: list[Reference] = field(default_factory=list)

    def creates(self, *types: str) -> Iterator[tuple[BaseSegment, tuple[BaseSegment, ...]]]:
        for seg, ancestors in walk(self.tree):
            if seg.is_type(*types):
                yield seg, ancestors

    def procedures(self) -> Iterator[tuple[str, BaseSegment]]:
        for seg, _ in self.creates("create_procedure_statement"):
            yield _name_of(seg), seg


Check = Callable[[FileContext], Iterator[Finding]]
CHECKS: dict[str, tuple[Check, str]] = {}


def check(name: str, rule: str) -> Callable[[Check], Check]:
    def register(fn: Check) -> Check:
        CHECKS[name] = (fn, rule)
        return fn

    return register


def findings(source: Source, tree: BaseSegment, definitions: list[Definition],
             references: list[Reference] | None = None) -> list[Finding]:
    ctx = FileContext(source, tree, definitions, list(references or ()))
    found = []
    for name, (fn, _) in CHECKS.items():
        for f in fn(ctx):
            f.check = name
            found.append(f)
    return found


def _finding(at: int, message: str) -> Finding:
    return Finding(at, "", message)


def _name_of(create: BaseSegment) -> str:
    return qualified(create.get_child("object_reference"))


def _in_database(ctx: FileContext, *folders: str) -> bool:
    return not ctx.source.is_test and (not folders or ctx.source.folder in folders)


# -- every file ------------------------------------------------------------------
@check("file-header", "every file starts with SET ANSI_NULLS ON; SET QUOTED_IDENTIFIER ON; GO")
def _file_header(ctx: FileContext) -> Iterator[Finding]:
    batches = ctx.tree.get_children("batch")
    first = batches[0] if batches else None
    sets = [flat(s).rstrip(";") for s in first.recursive_crawl("set_segment")] if first else []
    if sets != ["SET ANSI_NULLS ON", "SET QUOTED_IDENTIFIER ON"] or (
        first.get_child("go_statement") is None
    ):
        yield _finding(1, "the file must start with SET ANSI_NULLS ON; SET QUOTED_IDENTIFIER ON; "
                       "and GO, so that every object is created with the settings SQL Server "
                       "stores with it")


_MODULES = ("create_procedure_statement", "create_function_statement", "create_view_statement",
            "create_trigger_statement")


MESSAGE_CHARS = 255  # sp_addmessage's @msgtext is nvarchar(255)


@check("message-mark", f"a message's severity and text are literals, the text beginning {MESSAGE_MARK!r} "
                       f"and at most {MESSAGE_CHARS} characters")
def _message_mark(ctx: FileContext) -> Iterator[Finding]:
    """Message numbers are server-wide: the mark is how deploy tells relq's own texts,
    which it may update, from another application's, which it never overwrites. A longer
    text would be cut to its first 255 characters (sp_addmessage's @msgtext is nvarchar(255),
    https://learn.microsoft.com/sql/relational-databases/system-stored-procedures/sp-addmessage-transact-sql),
    and every deploy would find the server's text differing from the project's."""
    for d in ctx.definitions:
        if d.kind != "message":
            continue
        if d.severity is None or d.text is None:
            yield _finding(d.line, "give sp_addmessage @severity and @msgtext as literals: deploy "
                                   "compares them with what the server holds")
        elif not d.text.startswith(MESSAGE_MARK):
            yield _finding(d.line, f"begin the text with {MESSAGE_MARK!r}: messages are server-wide, "
                                   f"and deploy overwrites only texts that carry relq's mark")
        elif len(d.text) > MESSAGE_CHARS:
            yield _finding(d.line, f"the text has {len(d.text)} characters; sp_addmessage keeps "
                                   f"{MESSAGE_CHARS} (@msgtext is nvarchar(255))")


@check("batch-alone", "a CREATE of a procedure, function, view or trigger is alone in its batch")
def _batch_alone(ctx: FileContext) -> Iterator[Finding]:
    """SQL Server compiles such a CREATE only as the first statement of its batch, and
    its body runs to the batch's end: without a GO after it, the next statement (a
    second CREATE PROCEDURE, say) becomes part of it, or fails the batch."""
    for batch in ctx.tree.get_children("batch"):
        for i, statement in enumerate(batch.get_children("statement")):
            inner = code(statement)
            if not inner or not inner[0].is_type(*_MODULES):
                continue
            if i > 0:
                yield _finding(line(statement), f"{_name_of(inner[0])} must be the first statement of "
                                                f"its batch: put GO before it")
            for nested, _ in walk(inner[0]):
                if nested is not inner[0] and nested.is_type(*_MODULES):
                    yield _finding(line(nested), f"{_name_of(nested)} would become part of "
                                                 f"{_name_of(inner[0])}: put GO before it")


@check("file-name", "one object per file, in its kind's folder, named <schema>.<Object>.sql")
def _file_name(ctx: FileContext) -> Iterator[Finding]:
    src = ctx.source
    defs = ctx.definitions
    if src.is_test:
        yield from _test_class_name(ctx)
        return
    if src.folder == "migrations":
        if not MIGRATION_NAME.match(src.path.rsplit("/", 1)[-1]):
            yield _finding(1, "a migration is named V<4 digits>__<what_in_snake_case>.sql, "
                              "for example V0001__add_priority.sql")
        return
    if src.folder == "messages":
        numbers = [d for d in defs if d.kind == "message"]
        number = src.stem.split(".", 1)[0]
        if len(numbers) != 1 or numbers[0].name != number or "." not in src.stem:
            yield _finding(1, "a message file registers exactly one message and is named "
                              "<number>.<Meaning>.sql, for example 735701.InsideTransaction.sql")
        return
    if src.folder == "data":
        for d in defs:
            yield _finding(d.line, f"reference data files only write rows; {d.kind} {d.name} "
                                   f"belongs in its own folder")
        return
    if src.folder == "security":
        for d in defs:
            if d.kind != "role":
                yield _finding(d.line, f"security files create roles and grant; {d.kind} "
                                       f"{d.name} belongs in its own folder")
            elif d.name.casefold() != src.stem.casefold():
                yield _finding(d.line, f"the file creates role {d.name}: name it {d.name}.sql")
        return
    kind = _FOLDER_KIND[src.folder]
    mains = [d for d in defs if d.kind == kind]
    others = [d for d in defs if d.kind != kind and not (
        kind == "table" and d.kind in ("index", "constraint"))]
    if len(mains) != 1:
        yield _finding(mains[1].line if len(mains) > 1 else 1,
                       f"a file in database/{src.folder}/ creates exactly one {kind} "
                       f"(found {len(mains)})")
        return
    main = mains[0]
    if key(main.name) != key(src.stem):
        yield _finding(main.line, f"the file creates {main.name}: name it {main.name}.sql")
    for d in others:
        if d.kind in ("index", "constraint") and d.table and key(d.table) != key(main.name):
            continue
        yield _finding(d.line, f"{d.kind} {d.name} belongs in its own file under database/")
    for d in defs:
        if d.kind in ("index", "constraint") and d.table and key(d.table) != key(main.name):
            yield _finding(d.line, f"{d.kind} {d.name} is on {d.table}: it belongs in "
                                   f"{d.table}.sql")


def _test_class_name(ctx: FileContext) -> Iterator[Finding]:
    m = TEST_CLASS_NAME.match(ctx.source.path.rsplit("/", 1)[-1])
    if not m:
        yield _finding(1, "a tSQLt test file is named <Object>Tests.class.sql")
        return
    cls = m["cls"]
    classes = [d for d in ctx.definitions if d.kind == "schema"]
    if [d.name for d in classes] != [cls]:
        yield _finding(1, f"the file must create its test class with "
                          f"EXEC tSQLt.NewTestClass '{cls}'; before its tests")
    for d in ctx.definitions:
        if d.kind == "procedure" and d.name.split(".")[0].casefold() != cls.casefold():
            yield _finding(d.line, f"procedure {d.name} is not in the test class {cls}")


@check("name-length", f"every name (tables, procedures, tSQLt tests, constraints, columns, "
                     f"parameters) is at most {MAX_IDENTIFIER} characters")
def _name_length(ctx: FileContext) -> Iterator[Finding]:
    for d in ctx.definitions:
        # the name after its schema: a tSQLt test's sentence may hold a dot of its own
        names = [d.name.split(".", 1)[-1]] if d.kind != "message" else []
        names += [c.name for c in d.columns] + [c.name for c in d.constraints if c.name]
        names += [p.name.lstrip("@") for p in d.params]
        for name in names:
            if len(name) > MAX_IDENTIFIER:
                yield _finding(d.line, f"{name[:40]}... is {len(name)} characters: SQL Server "
                                       f"takes at most {MAX_IDENTIFIER} in a name")


_ANNOTATION = re.compile(r"^\s*--\[@tSQLt:(?P<name>\w+)\]\((?P<args>.*)\)\s*$")


@check("test-name", "tests read [test <Object> <does what> when <condition>]; helpers do not "
                    "start with test")
def _test_name(ctx: FileContext) -> Iterator[Finding]:
    if not ctx.source.is_test:
        return
    for d in ctx.definitions:
        if d.kind != "procedure":
            continue
        name = local_name(d.name)
        if name.lower().startswith("test") and not re.match(r"^test \S+ .+ when .+", name):
            yield _finding(d.line, f"name the test [test <Object> <does what> when <condition>]: "
                                   f"{name} is run by tSQLt as a test")


@check("tsqlt-annotation", "a tSQLt annotation stands directly above its CREATE PROCEDURE")
def _tsqlt_annotation(ctx: FileContext) -> Iterator[Finding]:
    lines = ctx.source.text.splitlines()
    for at, text in enumerate(lines, start=1):
        if not _ANNOTATION.match(text):
            continue
        following = next((t.strip().upper() for t in lines[at:]
                          if t.strip() and not t.strip().startswith("--")), "")
        if not following.startswith("CREATE PROCEDURE"):
            yield _finding(at, "tSQLt reads annotations from the procedure's definition: put "
                               "this line directly above CREATE PROCEDURE, after the GO")


@check("tsqlt-no-transaction", "a NoTransaction test leaves no object behind: it asserts values, "
                               "not tables")
def _tsqlt_no_transaction(ctx: FileContext) -> Iterator[Finding]:
    # tSQLt.AssertEqualsTable keeps its comparison in a table it never drops; a normal
    # test's rollback removes it, but after a NoTransaction test tSQLt finds the new
    # object and reports the test as an error.
    lines = ctx.source.text.splitlines()
    annotated = {at for at, text in enumerate(lines, start=1)
                 if (m := _ANNOTATION.match(text)) and m["name"].casefold() == "notransaction"}
    for _, proc in ctx.procedures():
        if line(proc) - 1 not in annotated:
            continue
        for seg, _ in walk(proc):
            target = seg.get_child("object_reference") if seg.is_type("execute_script_statement") else None
            if target is not None and qualified(target).casefold() == "tsqlt.assertequalstable":
                yield _finding(line(seg), "AssertEqualsTable leaves a work table behind, which tSQLt "
                                          "reports as an error after a NoTransaction test: compare "
                                          "values (AssertEquals, AssertEqualsString)")


# -- running twice -----------------------------------------------------------------
@check("rerunnable", "every file can run twice: guarded CREATEs, CREATE OR ALTER, MERGE, @replace")
def _rerunnable(ctx: FileContext) -> Iterator[Finding]:
    if not _in_database(ctx):
        return
    guards = {
        "create_type_statement": ("TYPE_ID(", "IF TYPE_ID(N'<schema>.<Type>') IS NULL"),
        "create_table_statement": ("OBJECT_ID(", "IF OBJECT_ID(N'<schema>.<Table>', N'U') IS NULL"),
        "create_index_statement": ("", "an IF that finds the index missing in sys.indexes"),
        "alter_table_statement": ("", "an IF that finds the change not made yet (OBJECT_ID "
                                      "for a constraint, COL_LENGTH for a column)"),
        "create_role_statement": ("", "IF DATABASE_PRINCIPAL_ID(N'<Role>') IS NULL"),
        "create_schema_statement": ("", "IF SCHEMA_ID(N'<schema>') IS NULL"),
    }
    for seg, ancestors in ctx.creates(*guards):
        needle, how = guards[seg.get_type()]
        conditions = [flat(a.get_child("if_clause")) for a in ancestors
                      if a.is_type("if_then_statement") and a.get_child("if_clause")]
        if not any(needle in c for c in conditions):
            yield _finding(line(seg), f"this fails on a second run: guard it with {how}")
    for seg, _ in ctx.creates("create_procedure_statement", "create_function_statement",
                              "create_view_statement"):
        head = [c.raw.upper() for c in code(seg)[:3]]
        if head[:3] != ["CREATE", "OR", "ALTER"]:
            yield _finding(line(seg), "use CREATE OR ALTER, so that the file can run twice and "
                                      "keeps the object's permissions")
    if ctx.source.folder == "data":
        for seg, ancestors in ctx.creates("insert_statement"):
            if not any(a.is_type("if_then_statement") for a in ancestors):
                yield _finding(line(seg), "a plain INSERT of reference rows fails or duplicates "
                                          "on a second run: use MERGE")
    for seg, _ in ctx.creates("execute_script_statement"):
        target = seg.get_child("object_reference")
        if target is not None and local_name(target.raw).casefold() == "sp_addmessage":
            _, named = exec_args(seg)
            value = named.get("@replace")
            if value is None or flat(value).strip("N'") != "REPLACE":
                yield _finding(line(seg), "sp_addmessage needs @replace = 'replace' to run twice")


@check("one-build", "a migration that builds an index online builds only that one")
def _one_build(ctx: FileContext) -> Iterator[Finding]:
    """A migration runs in one transaction, and an online build's last shared lock lasts
    until it commits: a second build in the same file makes the table's writers wait for
    it from the end of the first (docs/operations.md, "One migration for the build"). The
    online and offline branches of one build name the same index and count once. The
    first migrations, from before online builds, are released and never change."""
    if ctx.source.folder != "migrations" or "ONLINE" not in flat(ctx.tree).upper():
        return
    seen: dict[str, tuple[str, int]] = {}
    for seg, _ in ctx.creates("create_index_statement"):
        name = seg.get_child("index_reference").raw.strip("[]")
        seen.setdefault(name.casefold(), (name, line(seg)))
    for name, at in list(seen.values())[1:]:
        yield _finding(at, f"a second index build in one migration ({name}): give it a migration of "
                           "its own, so that its lock does not hold the first one's table until the "
                           "file commits")


# -- documentation ---------------------------------------------------------------
@check("header-comment", "each object has a header comment naming its parameters")
def _header_comment(ctx: FileContext) -> Iterator[Finding]:
    if not _in_database(ctx, *_FOLDER_KIND):
        return
    kind = _FOLDER_KIND[ctx.source.folder]
    main = next((d for d in ctx.definitions if d.kind == kind), None)
    if main is None:
        return
    comments = [seg for seg, _ in walk(ctx.tree)
                if seg.is_type("block_comment", "inline_comment", "comment")
                and line(seg) <= main.line]
    text = "\n".join(c.raw for c in comments)
    if not any(not _is_allow(c.raw) for c in comments):
        yield _finding(main.line, f"{main.name} needs a header comment before it: what it does"
                                  + (", its parameters, return codes and errors"
                                     if main.params else ""))
        return
    for p in main.params:
        if not re.search(re.escape(p.name) + r"\b", text, re.IGNORECASE):
            yield _finding(main.line, f"the header comment of {main.name} does not describe "
                                      f"parameter {p.name}")


def _is_allow(raw: str) -> bool:
    return "relq:allow" in raw


# -- names -------------------------------------------------------------------------
@check("object-suffix", "functions end in _fn, views in _V, procedures in _trx or _utx")
def _object_suffix(ctx: FileContext) -> Iterator[Finding]:
    if not _in_database(ctx):
        return
    for d in ctx.definitions:
        if d.kind == "procedure" and not d.name.endswith(("_trx", "_utx")):
            yield _finding(d.line, f"procedure {d.name} must end in _trx (owns its transaction) "
                                   f"or _utx (runs inside the caller's)")
        elif d.kind in _SUFFIX and not d.name.endswith(_SUFFIX[d.kind]):
            yield _finding(d.line, f"{d.kind} {d.name} must end in {_SUFFIX[d.kind]}")


@check("unnamed-constraint", "every constraint and index has a name")
def _unnamed_constraint(ctx: FileContext) -> Iterator[Finding]:
    if not _in_database(ctx):
        return
    for d in ctx.definitions:
        if d.kind == "type":
            continue  # table types cannot name their constraints
        for c in d.constraints:
            if not c.name:
                yield _finding(c.line, f"name this {c.kind} constraint of {d.table or d.name}: "
                                       f"SQL Server would invent a different name on every "
                                       f"server")


@check("constraint-name", "primary keys are PK_<Table>, indexes IX_<Table>_<Purpose>")
def _constraint_name(ctx: FileContext) -> Iterator[Finding]:
    if not _in_database(ctx):
        return
    for d in ctx.definitions:
        if d.kind == "type":
            continue
        table = local_name(d.table or d.name)
        for c in d.constraints:
            if not c.name:
                continue
            if c.kind == "PRIMARY KEY" and c.name != f"PK_{table}":
                yield _finding(c.line, f"name the primary key of {table} PK_{table}")
            elif c.kind.endswith("INDEX") and not c.name.startswith(f"IX_{table}_"):
                yield _finding(c.line, f"name index {c.name} IX_{table}_<Purpose>")


# -- procedures ------------------------------------------------------------------
@check("nocount", "a procedure starts with SET NOCOUNT ON")
def _nocount(ctx: FileContext) -> Iterator[Finding]:
    if not _in_database(ctx):
        return
    for name, proc in ctx.procedures():
        body = statements(proc.get_child("procedure_statement"))
        first = next((s for s in body if not s.is_type("begin_end_block")), None)
        if first is None or flat(first).rstrip(";") != "SET NOCOUNT ON":
            yield _finding(line(proc), f"{name} must start with SET NOCOUNT ON: row-count "
                                       f"messages confuse clients that read result sets")


@dataclass
class _Skeleton:
    name: str
    proc: BaseSegment
    body: list[BaseSegment]

    @property
    def owns_transaction(self) -> bool:
        return self.name.endswith("_trx")

    @property
    def delegates(self) -> bool:
        """A _trx whose work is one EXEC of another _trx (a one-item form of a batch
        procedure, say): the procedure it calls owns the transaction."""
        if not self.owns_transaction or any(s.is_type("transaction_statement") for s in self.body):
            return False
        execs = [s for s in self.body if s.is_type("execute_script_statement")]
        return len(execs) == 1 and re.search(r"\w_TRX\b", flat(execs[0])) is not None

    def labels(self) -> list[tuple[str, int]]:
        return [(code(s)[0].raw.upper(), i) for i, s in enumerate(self.body)
                if s.is_type("label_segment")]

    def after(self, label: str) -> BaseSegment | None:
        for name, i in self.labels():
            if name == label:
                return self.body[i + 1] if i + 1 < len(self.body) else None
        return None


def _skeletons(ctx: FileContext) -> Iterator[_Skeleton]:
    if not _in_database(ctx, "procedures"):
        return
    for name, proc in ctx.procedures():
        if name.endswith(("_trx", "_utx")):
            yield _Skeleton(name, proc, statements(proc.get_child("procedure_statement")))


@check("trancount-guard", "_trx refuses to run inside a transaction, _utx outside one")
def _trancount_guard(ctx: FileContext) -> Iterator[Finding]:
    for sk in _skeletons(ctx):
        pattern = r"@@TRANCOUNT\s*(>|<>|!=)\s*0" if sk.owns_transaction else r"@@TRANCOUNT\s*=\s*0"
        guarded = any(s.is_type("if_then_statement") and
                      re.search(pattern, flat(s.get_child("if_clause"))) for s in sk.body)
        if not guarded:
            want = ("IF @@TRANCOUNT > 0 (it owns its transaction)" if sk.owns_transaction
                    else "IF @@TRANCOUNT = 0 (it runs inside the caller's transaction)")
            yield _finding(line(sk.proc), f"{sk.name} needs the guard {want}, raising a "
                                          f"registered error")


@check("named-transaction", "a _trx names its transaction (at most 32 characters) throughout")
def _named_transaction(ctx: FileContext) -> Iterator[Finding]:
    for sk in _skeletons(ctx):
        txs = [s for s in sk.body if s.is_type("transaction_statement")]
        if not sk.owns_transaction:
            for s in txs:
                if flat(s).startswith(("BEGIN", "COMMIT")):
                    yield _finding(line(s), f"{sk.name} runs inside the caller's transaction: "
                                            f"it must not begin or commit one")
            continue
        if sk.delegates:
            continue
        begins = [s for s in txs if flat(s).startswith("BEGIN")]
        if not begins:
            yield _finding(line(sk.proc), f"{sk.name} owns its transaction: "
                                          f"BEGIN TRANSACTION <name> is missing")
            continue
        tx_name = _transaction_name(begins[0])
        if tx_name is None:
            yield _finding(line(begins[0]), "name the transaction: BEGIN TRANSACTION <ProcName>")
            continue
        if len(tx_name) > MAX_TRANSACTION_NAME:
            yield _finding(line(begins[0]), f"transaction name {tx_name} has {len(tx_name)} "
                                            f"characters; SQL Server allows "
                                            f"{MAX_TRANSACTION_NAME}")
        for s in txs:
            if _transaction_name(s) != tx_name:
                yield _finding(line(s), f"use the transaction's name: {flat(s).split()[0]} "
                                        f"TRANSACTION {tx_name}")


def _transaction_name(seg: BaseSegment) -> str | None:
    ident = seg.get_child("naked_identifier", "quoted_identifier")
    return ident.raw if ident is not None else None


@check("capture-after-dml", "each INSERT/UPDATE/DELETE/MERGE is followed by "
                            "SELECT @RowCnt = @@ROWCOUNT, @ErrNo = @@ERROR")
def _capture_after_dml(ctx: FileContext) -> Iterator[Finding]:
    for sk in _skeletons(ctx):
        for i, s in enumerate(sk.body):
            dml = s
            if s.is_type("with_compound_statement"):
                dml = next((c for c in code(s) if c.is_type(*_DML)), None)
            if dml is None or not dml.is_type(*_DML):
                continue
            following = sk.body[i + 1] if i + 1 < len(sk.body) else None
            text = flat(following) if following is not None else ""
            if not (following is not None and following.is_type("select_statement")
                    and "@@ROWCOUNT" in text and "@@ERROR" in text):
                yield _finding(line(s), "capture the outcome right after this statement, in "
                                        "one statement: SELECT @RowCnt = @@ROWCOUNT, "
                                        "@ErrNo = @@ERROR;")


@check("exit-labels", "_trx ends in EXIT_TRANSACTION: then EXIT_ERROR:, _utx in EXIT_ERROR:")
def _exit_labels(ctx: FileContext) -> Iterator[Finding]:
    for sk in _skeletons(ctx):
        owns = sk.owns_transaction and not sk.delegates
        want = ["EXIT_TRANSACTION", "EXIT_ERROR"] if owns else ["EXIT_ERROR"]
        have = [name for name, _ in sk.labels() if name in want]
        if have != want:
            yield _finding(line(sk.proc), f"{sk.name} must end with the label"
                                          f"{'s' if len(want) > 1 else ''} "
                                          f"{' then '.join(w + ':' for w in want)}")


@check("rollback-guard", "EXIT_TRANSACTION: rolls back only when XACT_STATE() <> 0")
def _rollback_guard(ctx: FileContext) -> Iterator[Finding]:
    for sk in _skeletons(ctx):
        if not sk.owns_transaction or "EXIT_TRANSACTION" not in dict(sk.labels()):
            continue
        first = sk.after("EXIT_TRANSACTION")
        ok = (first is not None and first.is_type("if_then_statement")
              and "XACT_STATE()" in flat(first.get_child("if_clause"))
              and "ROLLBACK" in flat(first))
        if not ok:
            yield _finding(line(first) if first is not None else line(sk.proc),
                           "after EXIT_TRANSACTION: write IF XACT_STATE() <> 0 ROLLBACK "
                           "TRANSACTION <name>; a rollback with no open transaction is an "
                           "error of its own")


@check("error-return", "the error path returns a non-zero code")
def _error_return(ctx: FileContext) -> Iterator[Finding]:
    for sk in _skeletons(ctx):
        if "EXIT_ERROR" not in dict(sk.labels()):
            continue
        following = sk.after("EXIT_ERROR")
        value = flat(following).removeprefix("RETURN").strip(" ;") if following is not None else ""
        if following is None or not following.is_type("return_segment") or value in ("", "0"):
            yield _finding(line(following) if following is not None else line(sk.proc),
                           "after EXIT_ERROR: RETURN a non-zero code, so that the caller "
                           "always sees the failure")


@check("raiserror-goto", "every RAISERROR is followed by GOTO: RAISERROR does not stop a procedure")
def _raiserror_goto(ctx: FileContext) -> Iterator[Finding]:
    if not _in_database(ctx):
        return
    for _, proc in ctx.procedures():
        body = statements(proc.get_child("procedure_statement"))
        for i, s in enumerate(body):
            if not s.is_type("raiserror_statement"):
                continue
            args = raiserror_args(s)
            severity = flat(args[1]) if len(args) > 1 else ""
            if severity.isdigit() and int(severity) <= 10:
                continue  # an informational message, not an error
            following = body[i + 1] if i + 1 < len(body) else None
            if following is None or not following.is_type("goto_statement"):
                yield _finding(line(s), "RAISERROR does not stop the procedure: follow it with "
                                        "GOTO EXIT_TRANSACTION or GOTO EXIT_ERROR")


@check("goto-label", "every GOTO names a label of its procedure")
def _goto_label(ctx: FileContext) -> Iterator[Finding]:
    for name, proc in ctx.procedures():
        body = statements(proc.get_child("procedure_statement"))
        labels = {code(s)[0].raw.upper() for s in body if s.is_type("label_segment")}
        for s in body:
            if s.is_type("goto_statement"):
                target = code(s)[-1].raw.upper()
                if target not in labels:
                    yield _finding(line(s), f"GOTO {target}: {name} has no such label")


@check("raiserror-number", "RAISERROR raises a number registered in database/messages")
def _raiserror_number(ctx: FileContext) -> Iterator[Finding]:
    if not _in_database(ctx):
        return
    for seg, _ in ctx.creates("raiserror_statement"):
        args = raiserror_args(seg)
        if args and not args[0].is_type("numeric_literal", "integer_literal"):
            yield _finding(line(seg), "raise a registered error number, not ad-hoc text: the "
                                      "caller branches on the number")


# -- functions ---------------------------------------------------------------------
_CREATE_FUNCTION = "https://learn.microsoft.com/sql/t-sql/statements/create-function-transact-sql"


@check("schemabinding", "a scalar function that reads no table or view and calls no other function "
                        "is WITH SCHEMABINDING; a schema-bound function calls no other function")
def _schemabinding(ctx: FileContext) -> Iterator[Finding]:
    """Without SCHEMABINDING, SQL Server marks a T-SQL function as reading data whatever its
    body does, and a statement calling it may get a spool it does not need: "If creating a
    UDF that does not access data, specify the SCHEMABINDING option"
    (https://learn.microsoft.com/sql/relational-databases/user-defined-functions/create-user-defined-functions-database-engine).
    A function that calls another one is left alone: SQL Server would bind the callee too,
    and then refuse to ALTER it ("the base objects cannot be modified", CREATE FUNCTION),
    while deploy redeploys a changed function with ALTER."""
    if not _in_database(ctx, "functions"):
        return
    for seg, _ in ctx.creates("create_function_statement"):
        if not _returns_scalar(seg):
            continue
        name = _name_of(seg)
        first, last = line(seg), seg.get_end_loc()[0]
        inside = [r for r in ctx.references if first <= r.line <= last]
        reads = sorted({r.name for r in inside if r.kind == "table"})
        calls = sorted({r.name for r in inside if r.kind == "function" and key(r.name) != key(name)})
        bound = any("SCHEMABINDING" in words(o) for o in seg.get_children("function_option_segment"))
        if bound and calls:
            yield _finding(line(seg), f"{name} is WITH SCHEMABINDING and calls {', '.join(calls)}: "
                                      f"SQL Server would bind that function to it and refuse to ALTER it, "
                                      f"and deploy redeploys a changed function with ALTER; write the "
                                      f"logic inline, or drop SCHEMABINDING ({_CREATE_FUNCTION})")
        elif not bound and not reads and not calls:
            yield _finding(line(seg), f"{name} reads no table or view: declare it WITH SCHEMABINDING "
                                      f"(after RETURNS), or SQL Server assumes it reads data and may "
                                      f"guard every UPDATE calling it with a spool")


def _returns_scalar(create: BaseSegment) -> bool:
    """RETURNS <data type>, as opposed to RETURNS TABLE or RETURNS @t TABLE (...)."""
    parts = code(create)
    at = next((i for i, c in enumerate(parts) if c.is_type("keyword") and c.raw.upper() == "RETURNS"), None)
    returned = parts[at + 1] if at is not None and at + 1 < len(parts) else None
    return returned is not None and returned.is_type("data_type") and flat(returned) != "TABLE"


# -- queries -----------------------------------------------------------------------
@check("select-star", "no SELECT * in procedures, functions and views")
def _select_star(ctx: FileContext) -> Iterator[Finding]:
    if not _in_database(ctx, "procedures", "functions", "views"):
        return
    for seg, _ in ctx.creates("wildcard_expression"):
        yield _finding(line(seg), "name the columns: SELECT * changes meaning when the table "
                                  "does")


@check("readpast-lock", "READPAST comes with READCOMMITTEDLOCK, so that it skips locked rows under "
                       "READ_COMMITTED_SNAPSHOT too")
def _readpast_lock(ctx: FileContext) -> Iterator[Finding]:
    """With READ_COMMITTED_SNAPSHOT ON, a READ COMMITTED read takes no locks and reads the
    last committed version, so READPAST has nothing to skip; Microsoft's table-hint page
    says to include READCOMMITTEDLOCK with it
    (https://learn.microsoft.com/sql/t-sql/queries/hints-transact-sql-table, READPAST)."""
    if not _in_database(ctx, "procedures", "functions", "views"):
        return
    for seg, _ in ctx.creates("post_table_expression"):
        hints = {code(h)[0].raw.upper() for h, _ in walk(seg) if h.is_type("query_hint_segment") and code(h)}
        if "READPAST" in hints and "READCOMMITTEDLOCK" not in hints:
            yield _finding(line(seg), "add READCOMMITTEDLOCK beside READPAST: under "
                                      "READ_COMMITTED_SNAPSHOT a plain read sees row versions and skips "
                                      "nothing")


_APPLOCK_PROCEDURES = {"sp_getapplock", "sp_releaseapplock"}


@check("describable", "EXEC of sp_getapplock or sp_releaseapplock says WITH RESULT SETS NONE, so that "
                      "tools can describe the procedures that reach it")
def _describable(ctx: FileContext) -> Iterator[Finding]:
    """sp_describe_first_result_set (which SSIS, ADF and ORM scaffolding call) analyses every
    procedure a call may reach and stops with an error at an extended procedure, as
    sp_getapplock is underneath; an EXEC whose result sets are given (WITH RESULT SETS) is
    not analysed ("Result set specified by user" in
    https://learn.microsoft.com/sql/relational-databases/system-stored-procedures/sp-describe-first-result-set-transact-sql)."""
    if not _in_database(ctx, "procedures"):
        return
    for seg, _ in ctx.creates("execute_script_statement"):
        target = seg.get_child("object_reference")
        if target is None or local_name(target.raw).casefold() not in _APPLOCK_PROCEDURES:
            continue
        words = [s.raw.upper() for s, _ in walk(seg) if s.is_type("keyword")]
        if "RESULT" not in words:
            yield _finding(line(seg), f"end this EXEC of {local_name(target.raw)} with WITH RESULT SETS "
                                      f"NONE: without it, tools cannot describe the procedures that "
                                      f"reach it (sp_describe_first_result_set stops at an extended "
                                      f"procedure)")


_CONSTANTS = ("quoted_literal", "integer_literal", "numeric_literal", "null_literal", "binary_literal")


@check("exec-argument", "an EXEC passes constants, variables or DEFAULT, never an expression")
def _exec_argument(ctx: FileContext) -> Iterator[Finding]:
    """SQL Server refuses a function call or any other expression as a procedure's argument:
    "The parameter values supplied with a procedure call must be constants or a variable; a
    function name cannot be used as a parameter value"
    (https://learn.microsoft.com/sql/relational-databases/stored-procedures/specify-parameters).
    sqlfluff parses one; the batch would fail to compile (in a test class, the test is never
    created). Tests as much as procedures."""
    for seg, _ in ctx.creates("execute_script_statement"):
        positional, named = exec_args(seg)
        for value in [*positional, *named.values()]:
            parts = code(value) if value.is_type("expression") else [value]
            if len(parts) == 1 and parts[0].is_type("parameter", "system_variable", *_CONSTANTS):
                continue
            if value.raw.strip().upper() == "DEFAULT":
                continue
            yield _finding(line(value), f"SQL Server refuses an expression as an EXEC argument "
                                        f"({squash(value)[:60]}): assign it to a variable first")


@check("utc-time", "times are UTC: SYSUTCDATETIME()")
def _utc_time(ctx: FileContext) -> Iterator[Finding]:
    if not _in_database(ctx):
        return
    for seg, _ in walk(ctx.tree):
        if seg.is_type("function_name_identifier", "keyword", "bare_function") and (
            seg.raw.upper() in _LOCAL_TIME
        ):
            yield _finding(line(seg), f"{seg.raw.upper()} is not a precise UTC time: use "
                                      f"SYSUTCDATETIME()")


@check("dynamic-sql", "no dynamic SQL except sp_executesql with parameters")
def _dynamic_sql(ctx: FileContext) -> Iterator[Finding]:
    if not _in_database(ctx):
        return
    for seg, _ in ctx.creates("execute_script_statement"):
        target = seg.get_child("object_reference")
        if target is None:
            yield _finding(line(seg), "EXEC (<string>) builds SQL from text: use "
                                      "sys.sp_executesql with parameters")
        elif local_name(target.raw).casefold() == "sp_executesql":
            positional, named = exec_args(seg)
            if len(positional) + len(named) < 2:
                yield _finding(line(seg), "pass the values to sp_executesql as parameters "
                                          "(its second argument declares them)")


@check("sqlcmd-safe", "nothing sqlcmd would read as its own: $(variables), :commands, !!")
def _sqlcmd_safe(ctx: FileContext) -> Iterator[Finding]:
    for at, text in enumerate(ctx.source.text.splitlines(), start=1):
        stripped = text.lstrip()
        if "$(" in text:
            yield _finding(at, "sqlcmd reads $( as a scripting variable and deploy.sql runs "
                               "under sqlcmd: write it differently")
        elif stripped.startswith("!!") or re.match(r":[A-Za-z]+\b", stripped):
            yield _finding(at, "sqlcmd reads a line starting with : or !! as its own command")
        elif re.match(r"GO\s*;", stripped, re.IGNORECASE):
            yield _finding(at, "GO; is no batch separator for sqlcmd or deploy: write GO alone on its line")
