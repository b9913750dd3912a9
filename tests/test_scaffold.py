"""The queues' files are what the templates make, and `invoke new-queue` makes a
queue that builds: a change to a templated object goes through its template, for
every queue at once."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from relq import scaffold
from relq.compiler import build
from relq.compiler.conventions import MAX_IDENTIFIER
from relq.errors import RelqError
from relq.scaffold import (
    CATALOGUE,
    NewQueue,
    load,
    new_queue,
    parse_subtype,
    queue_renders,
    renders,
    resolve,
    templates,
    write,
)
from relq.scaffold.render import taken_aliases
from tests.conftest import REPO, project_copy

QUEUES = load(REPO)
RENDERS = renders(QUEUES)


def unused_name(root: Path, wanted: str) -> str:
    """``wanted``, or a queue name of its length made from it, that the project under ``root``
    does not use yet: neither a queue of its catalogue nor in the name of one of its files. The
    tests scaffold queues into a copy of the project, and a user's own Invoice queue must not
    make them fail."""
    taken = {q.name.casefold() for q in load(root)}
    files = [p.name.casefold() for folder in ("database", "tests_tsqlt") for p in (root / folder).rglob("*")]
    for n in range(1000):
        suffix = str(n) if n else ""
        name = wanted[:14 - len(suffix)] + suffix if len(wanted) + len(suffix) > 14 else wanted + suffix
        if name.casefold() not in taken and not any(name.casefold() in f for f in files):
            return name
    raise AssertionError(f"no name like {wanted} is free in {root}")


INVOICE = unused_name(REPO, "Invoice")
CAPTURE = unused_name(REPO, "PaymentCapture")  # as long as a queue's name may be: 14


def test_every_group_has_templates() -> None:
    assert len(templates("every_queue")) >= 30
    assert len(templates("job_queues")) >= 9
    assert len(templates("all_queues")) >= 2


def test_the_catalogue_lists_both_shapes() -> None:
    assert {(q.name, q.shape) for q in QUEUES} >= {("Notification", "custom"), ("SyncQueue", "job")}


@pytest.mark.parametrize(("path", "text"), RENDERS, ids=[path for path, _ in RENDERS])
def test_each_queue_file_is_what_its_template_makes(path: str, text: str) -> None:
    assert (REPO / path).read_text() == text, f"{path} differs from its template: change the template"


def test_no_file_of_a_job_queue_is_written_by_hand() -> None:
    """Every file that names a job queue comes from a template (a hand-written one
    would escape the comparison above)."""
    rendered = {path for path, _ in RENDERS}
    for queue in (q for q in QUEUES if q.shape == "job"):
        own = {p.relative_to(REPO).as_posix() for folder in ("database", "tests_tsqlt")
               for p in (REPO / folder).rglob(f"*{queue.name}*.sql")}
        assert own <= rendered, f"written by hand: {sorted(own - rendered)}"


LONGEST_TYPE = "Card" + "x" * 46  # 50 characters, as long as a job type may be
SUBTYPES = (
    parse_subtype(f"{LONGEST_TYPE}: CardholderReferenceNumberXxxxx NVARCHAR(100), Amount decimal(19,4), "
                  f"CapturedOn dbo.[_Timestamp] NULL, CardToken UNIQUEIDENTIFIER"),
    parse_subtype("BankPayment: Iban VARCHAR(34), Mandate dbo.EntityKey"),
)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, NewQueue]:
    root = project_copy(tmp_path_factory.mktemp("new-queue"))
    # the longest names and noun there may be, and two subtypes (a third type has none)
    return root, new_queue(root, CAPTURE, [LONGEST_TYPE, "BankPayment", "Refund"],
                           "card payment capture", subtypes=SUBTYPES)


@pytest.fixture(scope="module")
def scaffolded(made: tuple[Path, NewQueue]) -> tuple[Path, list[str]]:
    """The new queue's project and the paths of the files new_queue wrote."""
    root, new = made
    return root, list(new.written)


def test_a_new_queue_is_summed_up_in_one_line_not_a_list_of_paths(made: tuple[Path, NewQueue]) -> None:
    root, new = made
    assert new.summary() == (f"{CAPTURE} added to database/queues.toml: {len(new.written)} files written "
                             f"under database/ and tests_tsqlt/; next: invoke build, then invoke deploy")
    assert len(new.written) > 50 and all((root / path).is_file() for path in new.written)
    assert "\n" not in new.summary()


def test_a_new_queue_builds_right_after(scaffolded: tuple[Path, list[str]]) -> None:
    root, _ = scaffolded
    result = build(root)
    assert result.ok, [str(d) for d in result.diagnostics][:5]


def test_a_new_queue_gets_its_own_names_everywhere(scaffolded: tuple[Path, list[str]]) -> None:
    root, written = scaffolded
    own = [p for p in written if CAPTURE in p]
    assert f"database/tables/dbo.{CAPTURE}.sql" in own
    assert f"database/procedures/dbo.Next_{CAPTURE}_Batch_trx.sql" in own
    assert f"tests_tsqlt/Next_{CAPTURE}_utxTests.class.sql" in own
    assert f"database/security/{CAPTURE}.grants.sql" in own
    for path in own:
        text = (root / path).read_text()
        assert "SyncQueue" not in text and "CustomerSync" not in text, path
    assert f"'{LONGEST_TYPE}'" in (root / f"database/data/dbo.{CAPTURE}Type.sql").read_text()
    assert f"dbo.{CAPTURE} AS" in (root / "database/views/dbo.QueueHealth_V.sql").read_text()


def test_a_new_queue_gets_a_table_and_a_tsqlt_class_per_subtype(scaffolded: tuple[Path, list[str]]) -> None:
    root, written = scaffolded
    for table in (f"{CAPTURE}_{LONGEST_TYPE}", f"{CAPTURE}_BankPayment"):
        assert f"database/tables/dbo.{table}.sql" in written
        assert f"tests_tsqlt/{table}Tests.class.sql" in written
    assert f"database/functions/dbo.{CAPTURE}_IsType_fn.sql" in written
    assert f"tests_tsqlt/{CAPTURE}_IsType_fnTests.class.sql" in written
    assert not any("Refund" in path for path in written)  # a type without subtype has no table
    bank = (root / f"database/tables/dbo.{CAPTURE}_BankPayment.sql").read_text()
    assert "Iban VARCHAR(34) NOT NULL," in bank and "Mandate dbo.EntityKey NOT NULL," in bank
    assert f"REFERENCES dbo.{CAPTURE} (EnqueuedAt) ON DELETE CASCADE" in bank
    assert f"CHECK (dbo.{CAPTURE}_IsType_fn(EnqueuedAt, 'BankPayment') = 1)" in bank


def test_a_new_job_queue_can_hold_batched_items_and_take_callbacks_of_its_types_without_required_columns(
        scaffolded: tuple[Path, list[str]]) -> None:
    """Its items carry a BatchID; Open_QueueBatch_trx accepts it as a callback queue, but not a
    type whose subtype table has required columns (the callback is enqueued with none of them)."""
    root, _ = scaffolded
    assert "BatchID INT NULL," in (root / f"database/tables/dbo.{CAPTURE}.sql").read_text()
    assert "BatchID INT NULL," in (root / f"database/tables/dbo.{CAPTURE}Archive.sql").read_text()
    opened = (root / "database/procedures/dbo.Open_QueueBatch_trx.sql").read_text()
    own = opened[opened.index(f"@CallbackQueue = '{CAPTURE}'"):]
    own = own[:own.index("OR\n")]
    assert "AND @CallbackType <> 'BankPayment'" in own and f"AND @CallbackType <> '{LONGEST_TYPE}'" in own
    assert "Refund" not in own  # a type without a subtype table can be a callback
    callback = (root / "database/procedures/dbo.Callback_QueueBatch_utx.sql").read_text()
    assert f"EXEC @RetCode = dbo.Add_{CAPTURE}_utx" in callback


def test_a_subtypes_columns_reach_the_list_the_enqueue_the_view_and_the_archive(
        scaffolded: tuple[Path, list[str]]) -> None:
    root, _ = scaffolded
    text = {name: (root / f"database/{name}").read_text() for name in (
        f"types/dbo.{CAPTURE}ItemList.sql", f"procedures/dbo.Add_{CAPTURE}_utx.sql",
        f"views/dbo.Worker_{CAPTURE}_V.sql", f"tables/dbo.{CAPTURE}Archive.sql",
        f"procedures/dbo.Purge_{CAPTURE}_trx.sql")}
    assert "Amount DECIMAL(19, 4) NULL," in text[f"types/dbo.{CAPTURE}ItemList.sql"]
    assert "CapturedOn dbo.[_Timestamp] NULL," in text[f"tables/dbo.{CAPTURE}Archive.sql"]
    assert "s2.Mandate" in text[f"views/dbo.Worker_{CAPTURE}_V.sql"]
    assert f"LEFT JOIN dbo.{CAPTURE}_BankPayment AS s2" in text[f"views/dbo.Worker_{CAPTURE}_V.sql"]
    assert "v.Iban," in text[f"procedures/dbo.Purge_{CAPTURE}_trx.sql"]
    enqueue = text[f"procedures/dbo.Add_{CAPTURE}_utx.sql"]
    assert "i.[Type] = 'BankPayment'\n                AND i.Iban IS NULL" in enqueue
    assert "AND i.CapturedOn IS NULL" not in enqueue  # NULL allowed
    assert f"i.[Type] <> '{LONGEST_TYPE}'\n                AND i.CapturedOn IS NOT NULL" in enqueue
    assert f"INSERT INTO dbo.{CAPTURE}_BankPayment (" in enqueue


def test_a_new_queue_of_the_longest_name_keeps_within_the_line_lengths(
        scaffolded: tuple[Path, list[str]]) -> None:
    """The lines sqlfluff's LT05 would measure (`invoke lint`), for a name of 14 characters."""
    root, written = scaffolded
    for path in written:
        limit = 200 if path.startswith("tests_tsqlt/") else 120  # .sqlfluff and tests_tsqlt/.sqlfluff
        long = [n for n, line in enumerate((root / path).read_text().splitlines(), 1) if len(line) > limit]
        assert not long, f"{path}: lines {long} are longer than {limit}"


def test_a_custom_queue_of_the_longest_names_keeps_its_tsqlt_names_within_sql_servers_limit(
        tmp_path: Path) -> None:
    """A tSQLt test is a procedure, and SQL Server takes at most 128 characters in its name
    (the build's name-length check). The names that grow with the queue's and a channel's:
    Notification again, named with 14 characters, and its e-mail channel with 22 (the longest
    a channel may have: its <Channel>Response column has at most 30)."""
    name, channel = "NotifyCustomer", "RegisteredLetterByPost"
    assert (len(name), len(channel)) == (14, 22)
    root = tmp_path / "project"
    for folder in ("types", "migrations"):
        shutil.copytree(REPO / f"database/{folder}", root / f"database/{folder}")
    text = (REPO / CATALOGUE).read_text()
    assert text.count('table = "Notification_Email"\n') == 1
    text = text.replace('table = "Notification_Email"\n', f'table = "Notification_{channel}"\n')
    (root / CATALOGUE).write_text(text.replace('"Notification', f'"{name}'))
    queue = next(q for q in load(root) if q.name == name)
    assert [j.table for j in queue.joins if j.channel] == [f"{name}_{channel}", f"{name}_Sms"]
    classes = [text for path, text in queue_renders(queue) if path.startswith("tests_tsqlt/")]
    names = [procedure.strip("[]") for text in classes
             for procedure in re.findall(r"^CREATE PROCEDURE \w+\.(\[[^\]]+\]|\w+)", text, re.MULTILINE)]
    assert len([n for n in names if channel in n]) >= 5
    long = [(len(n), n) for n in names if len(n) > MAX_IDENTIFIER]
    assert not long, f"longer than SQL Server's {MAX_IDENTIFIER} characters: {long}"


@pytest.fixture(scope="module")
def one_type(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A job queue of one job type, the common case, whose names start with vowels."""
    root = project_copy(tmp_path_factory.mktemp("one-type"))
    pages = parse_subtype("InvoicePdf: Pages INT")
    return root, list(new_queue(root, INVOICE, ["InvoicePdf"], "invoice job", subtypes=(pages,)).written)


def test_a_new_queue_of_one_job_type_builds_right_after(one_type: tuple[Path, list[str]]) -> None:
    root, written = one_type
    assert f"tests_tsqlt/Drain_{INVOICE}_trxTests.class.sql" in written
    result = build(root)
    assert result.ok, [str(d) for d in result.diagnostics][:5]
    drain = (root / f"tests_tsqlt/Drain_{INVOICE}_trxTests.class.sql").read_text()
    assert "@Type = 'AddTestJobA', @EntityKey = N'SKU-1'" in drain  # the other type: one of the tests'


def test_a_new_queues_files_carry_nothing_of_the_queues_they_were_modelled_on(
        one_type: tuple[Path, list[str]]) -> None:
    root, written = one_type
    for path in (p for p in written if INVOICE in p):
        text = (root / path).read_text()
        for leftover in ("V0001", "V0002", "V0003", "V0004", "before leases", "several job types"):
            assert leftover not in text, (path, leftover)
        wrong = re.findall(rf"\ba (?:{INVOICE}|invoice|InvoicePdf)\b", text)  # an invoice job, an InvoicePdf
        assert not wrong, (path, wrong)
    assert "one queue serving its job types" in (root / f"database/tables/dbo.{INVOICE}.sql").read_text()
    assert "the exclusive subtype of an InvoicePdf invoice job" in " ".join(
        (root / f"database/tables/dbo.{INVOICE}_InvoicePdf.sql").read_text().split())


def test_adding_a_job_type_later_leaves_the_tables_and_types_as_deployed(
        one_type: tuple[Path, list[str]]) -> None:
    """They are created once: a change of their text would need a migration."""
    root, _ = one_type
    invoice = next(q for q in load(root) if q.name == INVOICE)
    before = dict(queue_renders(invoice))
    after = dict(queue_renders(replace(invoice, types=(*invoice.types, "InvoiceXml"))))
    once = [p for p in before if p.split("/")[1] in ("tables", "types")]
    assert len(once) >= 5
    assert [p for p in once if before[p] != after[p]] == []


def test_the_queues_deployed_before_keep_their_history_in_their_tables() -> None:
    """Their tables and types are created once: a change of their text would need a migration."""
    sync = dict(queue_renders(next(q for q in QUEUES if q.name == "SyncQueue")))
    assert "V0001__worker_lifecycle.sql" in sync["database/tables/dbo.SyncQueue.sql"]
    assert "V0003__archive_duration.sql" in sync["database/tables/dbo.SyncQueueArchive.sql"]
    assert "V0004__job_procedure_dbo.sql" in sync["database/tables/dbo.SyncQueueTypeProcedure.sql"]


@pytest.mark.parametrize(("word", "expected"), [
    ("sync job", "a sync job"), ("invoice job", "an invoice job"), ("InvoicePdf", "an InvoicePdf"),
    ("SMS", "an SMS"), ("SyncQueue", "a SyncQueue"), ("UserSync", "a UserSync"), ("Email", "an Email"),
    ("HTTP call", "an HTTP call"), ("PDF", "a PDF"), ("unit", "a unit"), ("update", "an update"),
])
def test_an_article_fits_the_word_after_it(word: str, expected: str) -> None:
    assert scaffold.with_article(word) == expected


def test_a_queues_history_names_migrations_the_project_has(tmp_path: Path) -> None:
    root = project_copy(tmp_path)
    text = (root / CATALOGUE).read_text()
    (root / CATALOGUE).write_text(text.replace('history = ["V0001", "V0003"', 'history = ["V0001", "V0099"'))
    with pytest.raises(RelqError, match="queue 2: history: no migration V0099 in database/migrations"):
        load(root)


def test_a_new_queue_is_in_the_catalogue_and_renders_again_unchanged(
        scaffolded: tuple[Path, list[str]]) -> None:
    root, _ = scaffolded
    queue = next(q for q in load(root) if q.name == CAPTURE)
    assert (queue.prefix, queue.alias, queue.shape, queue.noun) == (CAPTURE.lower(), "q", "job",
                                                                   "card payment capture")
    assert write(root) == []


NEW = f"new queue {INVOICE}"
PASCAL = "is not PascalCase letters and digits, as InvoiceExport"
TYPE_RULE = "not 1 to 50 letters, digits and _, starting with a letter"


@pytest.mark.parametrize(("name", "types", "noun", "message"), [
    ("SyncQueue", ["A", "B"], None,
     "new queue SyncQueue: database/queues.toml lists it already; pick another name"),
    ("Syncqueue", ["A", "B"], None,
     "new queue Syncqueue: database/queues.toml lists SyncQueue, to SQL Server the same name; "
     "pick another name"),
    ("syncqueue2", ["A", "B"], None, f"new queue syncqueue2: the name 'syncqueue2' {PASCAL}"),
    # a name new-queue makes no prefix of is told about the name alone: the user gives no prefix
    ("invoice_x", ["A", "B"], None, f"new queue invoice_x: the name 'invoice_x' {PASCAL}"),
    ("AVeryLongQueueNameIndeed", ["A", "B"], None,
     "new queue AVeryLongQueueNameIndeed: the name AVeryLongQueueNameIndeed has 24 characters, not 2 to 14"),
    (f"{INVOICE}\n", ["A", "B"], None, f"{NEW}\n: the name {INVOICE + chr(10)!r} {PASCAL}"),
    ("Order", ["A", "B"], None, "new queue Order: the name Order is a T-SQL reserved word"),
    (INVOICE, [], None, f"{NEW}: no job type is given: a job queue has one or more"),
    (INVOICE, ["Pdf", "Pdf"], None, f"{NEW}: the job type Pdf is given twice"),
    (INVOICE, ["Pdf", "A", "Pdf", "Pdf"], None, f"{NEW}: the job type Pdf is given 3 times"),
    (INVOICE, ["Pdf", "PDF"], None,
     f"{NEW}: the job types Pdf and PDF differ only in case: SQL Server takes them for one type"),
    (INVOICE, ["Send", "send", "SEND", "send"], None,
     f"{NEW}: the job types Send, send and SEND differ only in case: SQL Server takes them for one type"),
    (INVOICE, ["Send", "it's"], None, f"{NEW}: the job type \"it's\" is {TYPE_RULE}"),
    (INVOICE, ["Send", "B" * 51], None, f"{NEW}: the job type '{'B' * 51}' is {TYPE_RULE}"),
    (INVOICE, ["Send", "Bb\n", "1st"], None, f"{NEW}: the job types 'Bb\\n' and '1st' are {TYPE_RULE}"),
    (INVOICE, ["A", "B"], "invoice job\n",
     f"{NEW}: the noun 'invoice job\\n' is not lower-case letters, spaces and hyphens"),
    (INVOICE, ["A", "B"], "a very long noun for a job",
     f"{NEW}: the noun 'a very long noun for a job' has 26 characters, more than 20"),
    ("HeapQueue", ["A", "B"], None,  # the message queue's table
     "new queue HeapQueue: database/tables/dbo.HeapQueue.sql exists already; pick another name"),
    ("Heapqueue", ["A", "B"], None,  # the same name to SQL Server
     "new queue Heapqueue: database/tables/dbo.HeapQueue.sql exists already; pick another name"),
    (INVOICE, ["A", "AddTestJobA"], None,
     f"{NEW}: the job type AddTestJobA is one the tSQLt classes add themselves: pick another name"),
    (INVOICE, ["Pdf", "Pdf", "it's"], "Invoice job",  # every problem, in one line
     f"{NEW}: the noun 'Invoice job' is not lower-case letters, spaces and hyphens; "
     f"the job type Pdf is given twice; the job type \"it's\" is {TYPE_RULE}"),
])
def test_new_queue_refuses_bad_input_and_writes_nothing(tmp_path: Path, name: str, types: list[str],
                                                          noun: str | None, message: str) -> None:
    root = project_copy(tmp_path)
    _assert_refused(root, message, lambda: new_queue(root, name, types, noun))


def test_new_queue_refuses_a_name_whose_prefix_another_queues_settings_use(tmp_path: Path) -> None:
    """A new queue's settings prefix is its name in lower case: the user chose the name only."""
    root = project_copy(tmp_path)
    text = (root / CATALOGUE).read_text()
    (root / CATALOGUE).write_text(text.replace('prefix = "syncqueue"', f'prefix = "{INVOICE.lower()}"'))
    _assert_refused(root, f"{NEW}: the queue SyncQueue has the settings prefix {INVOICE.lower()} already, "
                          f"which a new queue takes from its name in lower case; pick another name",
                    lambda: new_queue(root, INVOICE, ["InvoicePdf"]))


SUBTYPE = f"{NEW}: subtype InvoicePdf"
TAKE = "is not one the templates take (dbo.<alias type>, NVARCHAR(n), INT, DECIMAL(p, s), ...)"


@pytest.mark.parametrize(("subtypes", "message"), [
    (["Pdf: Pages INT"], f"{NEW}: subtype Pdf: not one of the queue's job types (InvoicePdf, InvoiceXml)"),
    (["invoicepdf: Pages INT"], f"{NEW}: subtype invoicepdf: the job type is spelt InvoicePdf"),
    (["InvoicePdf:"], f"{SUBTYPE}: lists no column"),
    (["InvoicePdf: pages INT"], f"{SUBTYPE}: column 'pages' is not PascalCase of 1 to 30 letters and digits"),
    (["InvoicePdf: Select INT"], f"{SUBTYPE}: column Select is a T-SQL reserved word"),
    (["InvoicePdf: EntityKey NVARCHAR(10)"],
     f"{SUBTYPE}: column EntityKey is taken by the queue's own EntityKey"),
    (["InvoicePdf: Pages INT, PAGES BIGINT"],
     f"{SUBTYPE}: column PAGES is taken by subtype InvoicePdf's Pages"),
    (["InvoicePdf: Pages INT", "InvoiceXml: Pages INT"],
     f"{NEW}: subtype InvoiceXml: column Pages is taken by subtype InvoicePdf's Pages"),
    (["InvoicePdf: Pages INT", "InvoicePdf: Copies INT"],
     f"{SUBTYPE}: given twice: give all its columns in one"),
    (["InvoicePdf: Pages TEXT"], f"{SUBTYPE}: column Pages's type 'TEXT' {TAKE}"),
    (["InvoicePdf: Pages INT; DROP TABLE x"], f"{SUBTYPE}: column Pages's type 'INT; DROP TABLE x' {TAKE}"),
    (["InvoicePdf: Pages dbo.NoSuchType"],
     f"{SUBTYPE}: column Pages's type dbo.NoSuchType is not an alias type of database/types"),
    (["InvoicePdf: Title NVARCHAR(4001)"],
     f"{SUBTYPE}: column Title's type NVARCHAR(4001): the length is 1 to 4000"),
    (["InvoicePdf: Title VARCHAR(8001)"],
     f"{SUBTYPE}: column Title's type VARCHAR(8001): the length is 1 to 8000"),
    (["InvoicePdf: Title CHAR(MAX)"],
     f"{SUBTYPE}: column Title's type CHAR(MAX): MAX is for the VAR types only"),
    (["InvoicePdf: Total DECIMAL(39, 2)"], f"{SUBTYPE}: column Total's type DECIMAL(39, 2): "
                                           f"the precision is 1 to 38 and the scale at most the precision"),
    (["InvoicePdf: Total DECIMAL(2, 5)"], f"{SUBTYPE}: column Total's type DECIMAL(2, 5): "
                                          f"the precision is 1 to 38 and the scale at most the precision"),
    (["IsType_fn: Pages INT"], f"{NEW}: subtype IsType_fn: not one of the queue's job types (InvoicePdf, "
                               f"InvoiceXml); subtype IsType_fn: a subtype's table would take the name of "
                               f"dbo.{INVOICE}_IsType_fn"),
])
def test_new_queue_refuses_a_bad_subtype_and_writes_nothing(tmp_path: Path, subtypes: list[str],
                                                              message: str) -> None:
    root = project_copy(tmp_path)
    _assert_refused(root, message, lambda: new_queue(root, INVOICE, ["InvoicePdf", "InvoiceXml"],
                                                     subtypes=tuple(map(parse_subtype, subtypes))))


@pytest.mark.parametrize(("text", "message"), [
    ("InvoicePdf Pages INT", "--subtype 'InvoicePdf Pages INT' has no ':' after its job type: "
                             "give 'Type: Column TYPE, Column TYPE NULL, ...'"),
    ("InvoicePdf: Pages", "--subtype InvoicePdf: the column 'Pages' is not 'Name TYPE' or 'Name TYPE NULL'"),
])
def test_a_subtype_that_does_not_parse_is_refused_naming_the_option(text: str, message: str) -> None:
    with pytest.raises(RelqError) as refused:
        parse_subtype(text)
    assert str(refused.value) == message


def _assert_refused(root: Path, message: str, make: Callable[[], object]) -> None:
    """``make`` raises ``message``, all of it, and writes nothing under ``root``."""
    catalogue = (root / CATALOGUE).read_text()
    files = sorted(p for p in root.rglob("*") if p.is_file())
    with pytest.raises(RelqError) as refused:
        make()
    assert str(refused.value) == message
    assert (root / CATALOGUE).read_text() == catalogue
    assert sorted(p for p in root.rglob("*") if p.is_file()) == files


@pytest.mark.parametrize(("old", "new", "message"), [
    ('prefix = "syncqueue"', 'prefix = "notification"',
     "the queues Notification and SyncQueue have the same prefix notification: give each its own"),
    ('name = "SyncQueue"', 'name = "Notification"', "the queue Notification is listed twice"),
    ('name = "SyncQueue"', 'name = "NOTIFICATION"',
     "the queues Notification and NOTIFICATION differ only in case: SQL Server takes them for one name"),
])
def test_two_queues_of_the_catalogue_may_not_share_a_name_or_a_settings_prefix(
        tmp_path: Path, old: str, new: str, message: str) -> None:
    _assert_catalogue_refused(tmp_path, old, new, f"{CATALOGUE}: {message}")


def _assert_catalogue_refused(tmp_path: Path, old: str, new: str, message: str) -> None:
    """The project's catalogue with ``old`` (found once) made ``new`` is refused with ``message``."""
    root = project_copy(tmp_path)
    text = (root / CATALOGUE).read_text()
    assert text.count(old) == 1
    (root / CATALOGUE).write_text(text.replace(old, new))
    with pytest.raises(RelqError) as refused:
        load(root)
    assert str(refused.value) == message


NOTIFICATION = f"{CATALOGUE}: queue 1 (Notification)"
SYNC = f"{CATALOGUE}: queue 2 (SyncQueue)"


@pytest.mark.parametrize(("old", "new", "message"), [
    ('alias = "n"', 'alias = "s"', f"{NOTIFICATION}: the alias s is one the templates use themselves: take a "
                                   f"letter other than {', '.join(sorted(taken_aliases('custom')))}"),
    ('alias = "n"', 'alias = "nn"', f"{NOTIFICATION}: the alias 'nn' is not one lower-case letter"),
    ('prefix = "syncqueue"', 'prefix = "Sync-Queue"',
     f"{SYNC}: the prefix 'Sync-Queue' is not lower-case letters and digits, as syncqueue"),
    ('shape = "custom"', 'shape = "mixed"', f"{NOTIFICATION}: the shape 'mixed' is neither job nor custom"),
    ('verb = ["sync", "synced"]', 'verb = ["sync", "Synced"]',
     f"{SYNC}: the verb 'Synced' is not lower-case letters, spaces and hyphens"),
    ('types = ["CustomerSync", "InventorySync"]', 'types = []',
     f"{SYNC}: no job type is given: a job queue has one or more"),
    ('types = ["CustomerSync", "InventorySync"]', 'types = ["CustomerSync", "CustomerSync"]',
     f"{SYNC}: the job type CustomerSync is given twice"),
])
def test_a_catalogue_entry_is_told_what_of_it_is_wrong(tmp_path: Path, old: str, new: str,
                                                        message: str) -> None:
    _assert_catalogue_refused(tmp_path, old, new, message)


def test_new_queue_leaves_the_other_queues_files_alone(tmp_path: Path) -> None:
    root = project_copy(tmp_path)
    sync = next(q for q in QUEUES if q.name == "SyncQueue")
    path, text = queue_renders(sync)[0]
    (root / path).write_text(text + "-- a change in progress\n")
    new_queue(root, INVOICE, ["InvoicePdf", "InvoiceXml"])
    assert (root / path).read_text().endswith("-- a change in progress\n")


def test_every_queue_has_the_lifecycle_defaults(scaffolded: tuple[Path, list[str]]) -> None:
    """Without its defaults a queue's leases never expire and its items never fail."""
    root, _ = scaffolded
    function = (root / "database/functions/dbo.AppSettingInt_fn.sql").read_text()
    for queue in load(root):
        for setting in ("maxAttempts", "leaseSeconds", "backoffBaseMs", "backoffFactorPct", "backoffCapMs",
                        "backoffJitterPct"):
            assert f"('{queue.prefix}.{setting}', " in function, f"{queue.prefix}.{setting}"


def test_writing_the_templates_repairs_a_copy_that_drifted(tmp_path: Path) -> None:
    root = project_copy(tmp_path)
    sync = next(q for q in QUEUES if q.name == "SyncQueue")
    path, text = next((p, t) for p, t in queue_renders(sync) if "BEGIN" in t)
    (root / path).write_text(text.replace("BEGIN", "BEGIN -- drifted", 1))
    assert write(root) == [path]
    assert (root / path).read_text() == text
    assert write(root) == []  # a second run changes nothing


@pytest.mark.parametrize(("text", "message"), [
    ('[[queue]]\nname = "X"\n', "queue 1 lacks prefix, alias"),
    *((f'[[queue]]\nname = "Xy"\nprefix = "x"\nalias = "x"\n{wrong}\n', message) for wrong, message in [
        ("noun = 5", 'queue 1: noun is not a string (noun = "...")'),
        ("shape = 7", 'queue 1: shape is not a string (shape = "...")'),
        ('verb = ["notify", 5]', 'queue 1: verb is not two strings (verb = ["process", "processed"])'),
        ("verb = 5", 'queue 1: verb is not two strings (verb = ["process", "processed"])'),
        ('noun = 5\nverb = 5', 'queue 1: noun is not a string (noun = "..."); '
                               'verb is not two strings (verb = ["process", "processed"])'),
    ]),
    ('[[queue]]\nname = 7\nprefix = "x"\nalias = "x"\n', 'queue 1: name is not a string (name = "...")'),
    ("[[queue]\n", "Expected ']]' at the end of an array declaration (at line 1, column 8)"),
    ("# no queues\n", "no [[queue]]: the health views need at least one"),
    ("queue = 5\n", "queue is not a list of [[queue]] tables"),
    ("queue = [1]\n", "queue 1 is not a [[queue]] table"),
])
def test_a_broken_catalogue_is_one_readable_line(tmp_path: Path, text: str, message: str) -> None:
    root = project_copy(tmp_path)
    (root / CATALOGUE).write_text(text)
    with pytest.raises(RelqError) as refused:
        load(root)
    assert str(refused.value) == f"{CATALOGUE}: {message}"


RP_COLUMNS = 'columns = ["UserID dbo.DbUserID", "Username dbo.DbUsername", "OTP dbo.OtpCode"]'
SMS_COLUMNS = 'columns = ["PhoneNumber dbo.PhoneNumber"]'


RESET = f"{NOTIFICATION}: join Notification_ResetPassword"
SMS = f"{NOTIFICATION}: join Notification_Sms"
READ_RESET = f"{CATALOGUE}: queue 1: join Notification_ResetPassword"  # read before the entry is named


@pytest.mark.parametrize(("old", "new", "message"), [
    ('types = ["ResetPassword"]\n', "",
     f"{NOTIFICATION}: no job type is given: a custom queue names one, which its tSQLt classes' items take"),
    ('types = ["CustomerSync", "InventorySync"]\n',
     'types = ["CustomerSync", "InventorySync"]\n'
     '[[queue.join]]\ntable = "SyncQueue_X"\ncolumns = ["X INT"]\n',
     f"{SYNC}: a job queue takes no [[queue.join]]: its subtype tables come from [[queue.subtype]]"),
    ('types = ["ResetPassword"]', 'types = ["ResetPassword"]\n[[queue.subtype]]\ntype = "ResetPassword"\n'
                                  'columns = ["X INT"]',
     f"{NOTIFICATION}: a custom queue takes no [[queue.subtype]]: its subtype tables are written by hand "
     f"and named in [[queue.join]]"),
    ('table = "Notification_ResetPassword"', 'table = "dbo.Notification_ResetPassword"',
     f"{NOTIFICATION}: join 'dbo.Notification_ResetPassword': the table is not a name of letters, digits "
     f"and _ (give it without dbo.)"),
    ('table = "Notification_ResetPassword"', 'table = "Notification_Email"',
     f"{NOTIFICATION}: join Notification_Email: the table is joined twice"),
    ('table = "Notification_ResetPassword"', 'table = "NotificationAttempt"',
     f"{NOTIFICATION}: join NotificationAttempt: the table is the queue's own, not one written by hand"),
    ('table = "Notification_ResetPassword"', "table = 1",
     f'{CATALOGUE}: queue 1: [[queue.join]] 1: table is not a string (table = "<Queue>_Email")'),
    (RP_COLUMNS, 'columns = ["UserID dbo.DbUserID", 2]',
     f'{READ_RESET}: columns is not a list of strings (columns = ["...", ...])'),
    (RP_COLUMNS, "columns = []", f"{RESET}: lists no column"),
    (RP_COLUMNS, 'columns = ["UserID dbo.DbUserID", "user_name INT"]',
     f"{RESET}: column 'user_name' is not PascalCase of 1 to 30 letters and digits"),
    (RP_COLUMNS, 'columns = ["UserID dbo.DbUserID", "Select INT"]',
     f"{RESET}: column Select is a T-SQL reserved word"),
    (RP_COLUMNS, 'columns = ["UserID dbo.DbUserID", "LockedBy dbo.WorkerName"]',
     f"{RESET}: column LockedBy is taken by the queue's own LockedBy"),
    (RP_COLUMNS, 'columns = ["UserID", "Username", "OTP"]',
     f"{READ_RESET}: the column 'UserID' is not 'Name TYPE' or 'Name TYPE NULL'"),
    (RP_COLUMNS, 'columns = ["UserID dbo.UserKey"]',
     f"{READ_RESET}: column UserID's type dbo.UserKey is not an alias type of database/types"),
    (RP_COLUMNS, 'columns = ["UserID dbo.DbUserID NULL"]',
     f"{RESET}: column UserID is declared NULL: give its type alone (the archive's columns are NULL anyway)"),
    (RP_COLUMNS, 'columns = ["UserID XML"]',
     f"{RESET}: column UserID's type 'XML' is not one the templates take "
     f"(dbo.<alias type>, NVARCHAR(n), INT, ...)"),
    (RP_COLUMNS, 'columns = ["UserID NVARCHAR(5000)"]',
     f"{RESET}: column UserID's type NVARCHAR(5000): the length is 1 to 4000"),
    (SMS_COLUMNS, 'columns = ["EmailTo dbo.Email"]',
     f"{SMS}: column EmailTo is taken by join Notification_Email's EmailTo"),
    (SMS_COLUMNS, 'columns = ["SmsError dbo.WebResponse"]',
     f"{SMS}: column SmsError is taken by join Notification_Sms's channel result SmsError"),
    ('table = "Notification_Sms"', 'table = "Sms"',
     f"{NOTIFICATION}: join Sms: a channel's table (channel = true) is named Notification_<Channel>, "
     f"<Channel> PascalCase, as Notification_Email"),
    ('"PreferredLanguage dbo.[Name]"]\nchannel = true', '"PreferredLanguage dbo.[Name]"]\nchannel = "yes"',
     f"{CATALOGUE}: queue 1: join Notification_Email: channel is not true or false"),
    ('types = ["ResetPassword"]', 'types = "ResetPassword"',
     f'{CATALOGUE}: queue 1: types is not a list of strings (types = ["...", ...])'),
    ('noun = "SMS"', 'noun = "S.M.S."',
     f"{SMS}: the noun 'S.M.S.' is not 1 to 20 letters, spaces and hyphens, as \"e-mail\""),
    ('table = "Notification_ResetPassword"', f'table = "Notification_{"R" * 53}"',
     f"{NOTIFICATION}: join Notification_{'R' * 53}: 53 characters after Notification_, more than the 52 "
     f"that keep the worker view's tSQLt test names within 128"),
    ('noun = "SMS"', "noun = 3", f'{CATALOGUE}: queue 1: join Notification_Sms: noun is not a string '
                                f'(noun = "e-mail")'),
    (RP_COLUMNS, RP_COLUMNS + '\nnoun = "reset"',
     f"{RESET}: a noun names a channel, and this join has no channel = true"),
    ('types = ["CustomerSync", "InventorySync"]', 'types = ["CustomerSync", "InventorySync"]\n'
                                                  '[[queue.subtype]]\ntype = 5\ncolumns = []',
     f'{CATALOGUE}: queue 2: [[queue.subtype]] 1: type is not a string (type = "InvoicePdf")'),
    ('types = ["CustomerSync", "InventorySync"]', 'types = ["CustomerSync", "InventorySync"]\n'
                                                  '[[queue.subtype]]\ntype = "CustomerSync"\ncolumns = "x"',
     f'{CATALOGUE}: queue 2: subtype CustomerSync: columns is not a list (columns = ["Name TYPE", ...])'),
])
def test_a_catalogue_entry_of_the_wrong_shape_is_refused(tmp_path: Path, old: str, new: str,
                                                          message: str) -> None:
    _assert_catalogue_refused(tmp_path, old, new, message)


def test_the_custom_queue_fakes_the_tables_its_view_joins() -> None:
    """Its worker view reads them: a NoTransaction test must not see the real ones' rows."""
    notification = next(q for q in QUEUES if q.name == "Notification")
    view = (REPO / "database/views/dbo.Worker_Notification_V.sql").read_text()
    tables = [join.table for join in notification.joins]
    assert set(re.findall(r"(?:FROM|JOIN) dbo\.(\w+) AS", view)) == {"Notification", *tables}
    # (not dbo.Notification_IsType_fn's: it calls the function alone, which reads dbo.Notification)
    classes = [path for path, _ in queue_renders(notification)
               if path.startswith("tests_tsqlt/") and "_IsType_fn" not in path]
    assert len(classes) >= 9
    for path in classes:
        text = (REPO / path).read_text()
        if "FakeTable @TableName = N'dbo.Notification'" in text:
            for table in tables:
                assert f"FakeTable @TableName = N'dbo.{table}'" in text, (path, table)


def test_a_queue_with_a_subtype_table_gets_the_function_its_check_calls() -> None:
    """A custom queue's join named <Queue>_<Type> is that type's subtype table, written by
    hand with a CHECK through dbo.<Queue>_IsType_fn: the templates make the function."""
    notification = next(q for q in QUEUES if q.name == "Notification")
    assert notification.typed_tables == [{"type": "ResetPassword", "table": "Notification_ResetPassword"}]
    assert "database/functions/dbo.Notification_IsType_fn.sql" in dict(queue_renders(notification))
    table = (REPO / "database/tables/dbo.Notification_ResetPassword.sql").read_text()
    assert "dbo.Notification_IsType_fn(EnqueuedAt, 'ResetPassword')" in table
    sync = next(q for q in QUEUES if q.name == "SyncQueue")  # no subtypes: no function
    assert sync.typed_tables == []
    assert not [path for path, _ in queue_renders(sync) if "IsType_fn" in path]


def test_the_columns_a_custom_queue_joins_are_in_its_tables() -> None:
    """Its tables are written by hand, the view, the archive and the purge's copy are
    rendered from the catalogue: its columns must be the tables' own, of the same type."""
    for queue in (q for q in QUEUES if q.shape == "custom"):
        for join in queue.joins:
            table = (REPO / f"database/tables/dbo.{join.table}.sql").read_text()
            results = ("Response", "Error") if join.channel else ()
            own = [(c.name, c.type) for c in join.columns] + [(r, "dbo.WebResponse") for r in results]
            for name, sql_type in own:
                declared = rf"^ +{name} {re.escape(sql_type)}[ ,]"
                assert re.search(declared, table, re.MULTILINE), (join.table, name)


def test_an_alias_type_is_spelt_as_its_file_creates_it() -> None:
    """sqlfluff's lint wants one spelling of a type: dbo.email would pass the build, not the lint."""
    subtype, = resolve((parse_subtype("InvoicePdf: Recipient dbo.email, Language dbo.[name] NULL"),), REPO)
    assert [(c.type, c.base) for c in subtype.columns] == [("dbo.Email", "NVARCHAR(254)"),
                                                           ("dbo.[Name]", "NVARCHAR(128)")]


def test_an_alias_type_of_a_type_with_a_scale_keeps_it(tmp_path: Path) -> None:
    (tmp_path / "database/types").mkdir(parents=True)
    (tmp_path / "database/types/dbo.Money.sql").write_text(
        "IF TYPE_ID(N'dbo.Money') IS NULL\n    BEGIN\n"
        "        CREATE TYPE dbo.Money FROM DECIMAL(19, 4) NOT NULL;\n    END;\nGO\n")
    subtype, = resolve((parse_subtype("InvoicePdf: Amount dbo.money"),), tmp_path)
    column, = subtype.columns
    assert (column.type, column.base, column.sample) == ("dbo.Money", "DECIMAL(19, 4)", "0.0001")


def test_a_subtype_column_is_required_unless_declared_null() -> None:
    subtype = parse_subtype("InvoicePdf: Template NVARCHAR(100) NOT NULL, Copies int null, Pages INT")
    assert [(c.name, c.type, c.null) for c in subtype.columns] == [
        ("Template", "NVARCHAR(100)", False), ("Copies", "INT", True), ("Pages", "INT", False)]


def test_the_tsqlt_classes_fill_each_joined_column_with_a_value_of_its_type_and_its_own() -> None:
    """The worker view's and the purge's classes insert them and compare them: a value the
    column's type refuses fails the class, and two alike hide a column mapped to another."""
    variables = next(q for q in QUEUES if q.name == "Notification").variables()
    values = variables["joined_values"]
    assert list(values) == variables["joined_columns"]
    assert len(set(values.values())) == len(values)
    assert [values[c] for c in ("UserID", "Username", "OTP", "SmsError")] == ["1", "N'2'", "'3'", "N'10'"]
    for base, n, literal in [("DATE", 2, "'2024-01-03'"), ("DATETIME2(7)", 1, "'2024-01-02T00:00:00'"),
                             ("UNIQUEIDENTIFIER", 12, "'00000000-0000-0000-0000-000000000012'"),
                             ("CHAR(1)", 9, "'9'"), ("CHAR(1)", 10, "'A'"), ("NVARCHAR(MAX)", 10, "N'10'"),
                             ("DECIMAL(3, 3)", 2, "0.002"), ("BINARY(2)", 1, "0x0001"),
                             ("VARBINARY(MAX)", 1, "0x01"),
                             ("TIME(0)", 3, "'08:03:00'"), ("BIT", 3, "1"), ("TINYINT", 7, "7")]:
        assert scaffold.Column("C", base, base=base).value(n) == literal, (base, n)


def test_the_names_the_tests_scaffold_step_aside_for_a_users_queue_of_that_name(tmp_path: Path) -> None:
    root = project_copy(tmp_path)
    new_queue(root, INVOICE, ["InvoicePdf"])  # the user's own queue, named as the tests' would be
    new_queue(root, CAPTURE, ["CardPayment"])
    invoice, capture = unused_name(root, INVOICE), unused_name(root, CAPTURE)
    assert invoice.startswith(INVOICE) and invoice != INVOICE
    assert len(capture) == 14 and capture != CAPTURE
    assert new_queue(root, invoice, ["InvoicePdf"]).written  # what the tests would scaffold: accepted
    assert new_queue(root, capture, ["CardPayment"]).written
