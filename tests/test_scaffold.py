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
    load,
    new_queue,
    parse_subtype,
    queue_renders,
    renders,
    resolve,
    templates,
    write,
)
from tests.conftest import REPO

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


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    for name in ("database", "tests_tsqlt"):
        shutil.copytree(REPO / name, root / name)
    shutil.copy(REPO / ".sqlfluff", root / ".sqlfluff")
    if (REPO / ".relq_cache").is_dir():  # `invoke test` builds first: parse only the new files
        shutil.copytree(REPO / ".relq_cache", root / ".relq_cache")
    return root


LONGEST_TYPE = "Card" + "x" * 46  # 50 characters, as long as a job type may be
SUBTYPES = (
    parse_subtype(f"{LONGEST_TYPE}: CardholderReferenceNumberXxxxx NVARCHAR(100), Amount decimal(19,4), "
                  f"CapturedOn dbo.[_Timestamp] NULL, CardToken UNIQUEIDENTIFIER"),
    parse_subtype("BankPayment: Iban VARCHAR(34), Mandate dbo.EntityKey"),
)


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = _project(tmp_path_factory.mktemp("new-queue"))
    # the longest names and noun there may be, and two subtypes (a third type has none)
    return root, new_queue(root, CAPTURE, [LONGEST_TYPE, "BankPayment", "Refund"],
                           "card payment capture", subtypes=SUBTYPES)


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
    root = _project(tmp_path_factory.mktemp("one-type"))
    pages = parse_subtype("InvoicePdf: Pages INT")
    return root, new_queue(root, INVOICE, ["InvoicePdf"], "invoice job", subtypes=(pages,))


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
        for leftover in ("V0001", "V0002", "V0003", "before leases", "several job types"):
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


@pytest.mark.parametrize(("word", "expected"), [
    ("sync job", "a sync job"), ("invoice job", "an invoice job"), ("InvoicePdf", "an InvoicePdf"),
    ("SMS", "an SMS"), ("SyncQueue", "a SyncQueue"), ("UserSync", "a UserSync"), ("Email", "an Email"),
    ("HTTP call", "an HTTP call"), ("PDF", "a PDF"), ("unit", "a unit"), ("update", "an update"),
])
def test_an_article_fits_the_word_after_it(word: str, expected: str) -> None:
    assert scaffold.with_article(word) == expected


def test_a_queues_history_names_migrations_the_project_has(tmp_path: Path) -> None:
    root = _project(tmp_path)
    text = (root / CATALOGUE).read_text()
    (root / CATALOGUE).write_text(text.replace('["V0001", "V0003"]', '["V0001", "V0099"]'))
    with pytest.raises(RelqError, match="queue 2: history: no migration V0099 in database/migrations"):
        load(root)


def test_a_new_queue_is_in_the_catalogue_and_renders_again_unchanged(
        scaffolded: tuple[Path, list[str]]) -> None:
    root, _ = scaffolded
    queue = next(q for q in load(root) if q.name == CAPTURE)
    assert (queue.prefix, queue.alias, queue.shape, queue.noun) == (CAPTURE.lower(), "q", "job",
                                                                   "card payment capture")
    assert write(root) == []


@pytest.mark.parametrize(("name", "types", "noun", "problem"), [
    ("SyncQueue", ["A", "B"], None, "lists it already"),
    ("Syncqueue", ["A", "B"], None, "lists it already"),
    ("syncqueue2", ["A", "B"], None, "PascalCase"),
    ("AVeryLongQueueNameIndeed", ["A", "B"], None, "2 to 14"),
    (f"{INVOICE}\n", ["A", "B"], None, "PascalCase"),
    ("Order", ["A", "B"], None, "reserved word"),
    (INVOICE, [], None, "lists its job types"),
    (INVOICE, ["Send", "send"], None, "differ in more than case"),
    (INVOICE, ["Send", "it's"], None, "job types are 1 to 50"),
    (INVOICE, ["Send", "B" * 51], None, "job types are 1 to 50"),
    (INVOICE, ["Send", "Bb\n"], None, "job types are 1 to 50"),
    (INVOICE, ["A", "B"], "invoice job\n", "lower-case words"),
    (INVOICE, ["A", "B"], "a very long noun for a job", "20 characters at most"),
    ("HeapQueue", ["A", "B"], None, "exists already"),  # the message queue's table
    ("Heapqueue", ["A", "B"], None, "exists already"),  # the same name to SQL Server
    (INVOICE, ["A", "AddTestJobA"], None, "the tSQLt classes' own job types"),
])
def test_new_queue_refuses_bad_input_and_writes_nothing(tmp_path: Path, name: str, types: list[str],
                                                          noun: str | None, problem: str) -> None:
    root = _project(tmp_path)
    _assert_refused(root, problem, lambda: new_queue(root, name, types, noun))


@pytest.mark.parametrize(("subtypes", "problem"), [
    (["Pdf: Pages INT"], "not one of the queue's job types"),
    (["invoicepdf: Pages INT"], "not one of the queue's job types"),
    (["InvoicePdf:"], "lists no column"),
    (["InvoicePdf: pages INT"], "PascalCase, 1 to 30"),
    (["InvoicePdf: Select INT"], "reserved word"),
    (["InvoicePdf: EntityKey NVARCHAR(10)"], "column EntityKey is taken"),
    (["InvoicePdf: Pages INT, PAGES BIGINT"], "column PAGES is taken"),
    (["InvoicePdf: Pages INT", "InvoiceXml: Pages INT"], "column Pages is taken"),
    (["InvoicePdf: Pages INT", "InvoicePdf: Copies INT"], "a job type has one subtype"),
    (["InvoicePdf: Pages TEXT"], "not one the templates take"),
    (["InvoicePdf: Pages INT; DROP TABLE x"], "not one the templates take"),
    (["InvoicePdf: Pages dbo.NoSuchType"], "not an alias type of database/types"),
    (["InvoicePdf: Title NVARCHAR(4001)"], "the length is 1 to 4000"),
    (["InvoicePdf: Title VARCHAR(8001)"], "the length is 1 to 8000"),
    (["InvoicePdf: Title CHAR(MAX)"], "MAX is for the VAR types only"),
    (["InvoicePdf: Total DECIMAL(39, 2)"], "the precision is 1 to 38"),
    (["InvoicePdf: Total DECIMAL(2, 5)"], "the scale at most the precision"),
    (["InvoicePdf Pages INT"], "'Type: Column TYPE"),
    (["IsType_fn: Pages INT"], f"take the name of dbo.{INVOICE}_IsType_fn"),
    (["InvoicePdf: Pages"], "'Name TYPE' or 'Name TYPE NULL'"),
])
def test_new_queue_refuses_a_bad_subtype_and_writes_nothing(tmp_path: Path, subtypes: list[str],
                                                              problem: str) -> None:
    root = _project(tmp_path)
    _assert_refused(root, problem, lambda: new_queue(root, INVOICE, ["InvoicePdf", "InvoiceXml"],
                                                     subtypes=tuple(map(parse_subtype, subtypes))))


def _assert_refused(root: Path, problem: str, make: Callable[[], object]) -> None:
    """``make`` raises ``problem`` and writes nothing under ``root``."""
    catalogue = (root / CATALOGUE).read_text()
    files = sorted(p for p in root.rglob("*") if p.is_file())
    with pytest.raises(RelqError, match=problem):
        make()
    assert (root / CATALOGUE).read_text() == catalogue
    assert sorted(p for p in root.rglob("*") if p.is_file()) == files


def test_two_queues_of_the_catalogue_may_not_share_a_settings_prefix(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / CATALOGUE).write_text((root / CATALOGUE).read_text().replace('prefix = "syncqueue"',
                                                                          'prefix = "notification"'))
    with pytest.raises(RelqError, match="two queues have the prefix notification"):
        load(root)


def test_a_catalogue_alias_may_not_be_one_the_templates_use(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / CATALOGUE).write_text((root / CATALOGUE).read_text().replace('alias = "n"', 'alias = "s"'))
    with pytest.raises(RelqError, match="alias is one lower-case letter the templates do not use"):
        load(root)


def test_new_queue_leaves_the_other_queues_files_alone(tmp_path: Path) -> None:
    root = _project(tmp_path)
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
    root = _project(tmp_path)
    sync = next(q for q in QUEUES if q.name == "SyncQueue")
    path, text = next((p, t) for p, t in queue_renders(sync) if "BEGIN" in t)
    (root / path).write_text(text.replace("BEGIN", "BEGIN -- drifted", 1))
    assert write(root) == [path]
    assert (root / path).read_text() == text
    assert write(root) == []  # a second run changes nothing


def test_a_broken_catalogue_is_one_readable_line(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / CATALOGUE).write_text('[[queue]]\nname = "X"\n')
    with pytest.raises(RelqError, match="queue 1 lacks prefix, alias"):
        load(root)
    for wrong in ('noun = 5', 'verb = ["notify", 5]', 'verb = 5', 'shape = 7'):
        (root / CATALOGUE).write_text(f'[[queue]]\nname = "Xy"\nprefix = "x"\nalias = "x"\n{wrong}\n')
        with pytest.raises(RelqError, match="queue 1: name, prefix, alias, shape and noun are strings"):
            load(root)
    (root / CATALOGUE).write_text('[[queue]]\nname = 7\nprefix = "x"\nalias = "x"\n')
    with pytest.raises(RelqError, match="queue 1: name, prefix, alias, shape and noun are strings"):
        load(root)
    (root / CATALOGUE).write_text("[[queue]\n")
    with pytest.raises(RelqError, match=CATALOGUE):
        load(root)
    (root / CATALOGUE).write_text("# no queues\n")
    with pytest.raises(RelqError, match="at least one"):
        load(root)


RP_COLUMNS = 'columns = ["UserID dbo.DbUserID", "Username dbo.DbUsername", "OTP dbo.OtpCode"]'
SMS_COLUMNS = 'columns = ["PhoneNumber dbo.PhoneNumber"]'


@pytest.mark.parametrize(("old", "new", "problem"), [
    ('types = ["ResetPassword"]\n', "", "a custom queue names a job type of its own"),
    ('types = ["CustomerSync", "InventorySync"]\n',
     'types = ["CustomerSync", "InventorySync"]\n'
     '[[queue.join]]\ntable = "SyncQueue_X"\ncolumns = ["X INT"]\n',
     "names a custom queue's tables"),
    ('table = "Notification_ResetPassword"', 'table = "dbo.Notification_ResetPassword"', "by name"),
    ('table = "Notification_ResetPassword"', 'table = "Notification_Email"', "once"),
    ('table = "Notification_ResetPassword"', 'table = "NotificationAttempt"', "not the queue's own"),
    ('table = "Notification_ResetPassword"', "table = 1", r"each \[\[queue.join\]\] has table"),
    (RP_COLUMNS, 'columns = ["UserID dbo.DbUserID", 2]', "columns is a list of strings"),
    (RP_COLUMNS, "columns = []", "join Notification_ResetPassword: lists no column"),
    (RP_COLUMNS, 'columns = ["UserID dbo.DbUserID", "user_name INT"]', "'user_name' is PascalCase"),
    (RP_COLUMNS, 'columns = ["UserID dbo.DbUserID", "Select INT"]', "'Select' is PascalCase"),
    (RP_COLUMNS, 'columns = ["UserID dbo.DbUserID", "LockedBy dbo.WorkerName"]', "column LockedBy is taken"),
    (RP_COLUMNS, 'columns = ["UserID", "Username", "OTP"]', "a column is 'Name TYPE'"),
    (RP_COLUMNS, 'columns = ["UserID dbo.UserKey"]',
     "join Notification_ResetPassword: column UserID's type dbo.UserKey is not an alias type"),
    (RP_COLUMNS, 'columns = ["UserID dbo.DbUserID NULL"]', "column UserID's type 'dbo.DbUserID' .* no NULL"),
    (RP_COLUMNS, 'columns = ["UserID XML"]', "column UserID's type 'XML' is not one the templates take"),
    (RP_COLUMNS, 'columns = ["UserID NVARCHAR(5000)"]', "column UserID's type 'NVARCHAR\\(5000\\)'"),
    (SMS_COLUMNS, 'columns = ["EmailTo dbo.Email"]', "column EmailTo is taken"),
    (SMS_COLUMNS, 'columns = ["SmsError dbo.WebResponse"]', "column SmsError is taken"),
    ('table = "Notification_Sms"', 'table = "Sms"', "a channel's table is Notification_<Channel>"),
    ('"PreferredLanguage dbo.[Name]"]\nchannel = true', '"PreferredLanguage dbo.[Name]"]\nchannel = "yes"',
     "maybe channel = true"),
    ('types = ["ResetPassword"]', 'types = "ResetPassword"', "types is a list of strings"),
    ('noun = "SMS"', 'noun = "S.M.S."', "a channel's noun is 1 to 20 letters, spaces and hyphens"),
    ('table = "Notification_ResetPassword"', f'table = "Notification_{"R" * 53}"',
     "at most 52 characters after Notification_, so that the worker view's tSQLt test names"),
    ('noun = "SMS"', "noun = 3", r"maybe channel = true and noun"),
    (RP_COLUMNS, RP_COLUMNS + '\nnoun = "reset"', "join Notification_ResetPassword: a channel's noun"),
])
def test_a_catalogue_entry_of_the_wrong_shape_is_refused(tmp_path: Path, old: str, new: str,
                                                          problem: str) -> None:
    root = _project(tmp_path)
    text = (root / CATALOGUE).read_text()
    assert text.count(old) == 1
    (root / CATALOGUE).write_text(text.replace(old, new))
    with pytest.raises(RelqError, match=problem):
        load(root)


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
    root = _project(tmp_path)
    new_queue(root, INVOICE, ["InvoicePdf"])  # the user's own queue, named as the tests' would be
    new_queue(root, CAPTURE, ["CardPayment"])
    invoice, capture = unused_name(root, INVOICE), unused_name(root, CAPTURE)
    assert invoice.startswith(INVOICE) and invoice != INVOICE
    assert len(capture) == 14 and capture != CAPTURE
    assert new_queue(root, invoice, ["InvoicePdf"])  # what the tests would scaffold: accepted
    assert new_queue(root, capture, ["CardPayment"])
