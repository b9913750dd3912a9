"""The queues' files are what the templates make, and `invoke new-queue` makes a
queue that builds: a change to a templated object goes through its template, for
every queue at once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from relq.build import build
from relq.errors import RelqError
from relq.scaffold import CATALOGUE, load, new_queue, queue_renders, renders, templates, write
from tests.conftest import REPO

QUEUES = load(REPO)
RENDERS = renders(QUEUES)


def test_every_group_has_templates() -> None:
    assert len(templates("every_queue")) >= 10
    assert len(templates("job_queues")) >= 30
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


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = _project(tmp_path_factory.mktemp("new-queue"))
    # the longest name and noun there may be
    return root, new_queue(root, "PaymentCapture", ["CardPayment", "BankPayment"], "card payment capture")


def test_a_new_queue_builds_right_after(scaffolded: tuple[Path, list[str]]) -> None:
    root, _ = scaffolded
    result = build(root)
    assert result.ok, [str(d) for d in result.diagnostics][:5]


def test_a_new_queue_gets_its_own_names_everywhere(scaffolded: tuple[Path, list[str]]) -> None:
    root, written = scaffolded
    own = [p for p in written if "PaymentCapture" in p]
    assert "database/tables/dbo.PaymentCapture.sql" in own
    assert "database/procedures/dbo.Next_PaymentCapture_Batch_trx.sql" in own
    assert "tests_tsqlt/Next_PaymentCapture_utxTests.class.sql" in own
    assert "database/security/PaymentCapture.grants.sql" in own
    for path in own:
        text = (root / path).read_text()
        assert "SyncQueue" not in text and "CustomerSync" not in text, path
    assert "'CardPayment'" in (root / "database/data/dbo.PaymentCaptureType.sql").read_text()
    assert "dbo.PaymentCapture AS" in (root / "database/views/dbo.QueueHealth_V.sql").read_text()


def test_a_new_queue_of_the_longest_name_keeps_within_the_line_lengths(
        scaffolded: tuple[Path, list[str]]) -> None:
    """The lines sqlfluff's LT05 would measure (`invoke lint`), for a name of 14 characters."""
    root, written = scaffolded
    for path in written:
        limit = 200 if path.startswith("tests_tsqlt/") else 120  # .sqlfluff and tests_tsqlt/.sqlfluff
        long = [n for n, line in enumerate((root / path).read_text().splitlines(), 1) if len(line) > limit]
        assert not long, f"{path}: lines {long} are longer than {limit}"


def test_a_new_queue_is_in_the_catalogue_and_renders_again_unchanged(
        scaffolded: tuple[Path, list[str]]) -> None:
    root, _ = scaffolded
    queue = next(q for q in load(root) if q.name == "PaymentCapture")
    assert (queue.prefix, queue.alias, queue.shape, queue.noun) == ("paymentcapture", "q", "job",
                                                                   "card payment capture")
    assert write(root) == []


@pytest.mark.parametrize(("name", "types", "noun", "problem"), [
    ("SyncQueue", ["A", "B"], None, "lists it already"),
    ("Syncqueue", ["A", "B"], None, "lists it already"),
    ("syncqueue2", ["A", "B"], None, "PascalCase"),
    ("AVeryLongQueueNameIndeed", ["A", "B"], None, "2 to 14"),
    ("Invoice\n", ["A", "B"], None, "PascalCase"),
    ("Order", ["A", "B"], None, "reserved word"),
    ("Invoice", ["OnlyOne"], None, "at least two job types"),
    ("Invoice", ["Send", "send"], None, "differ in more than case"),
    ("Invoice", ["Send", "it's"], None, "job types are 1 to 50"),
    ("Invoice", ["Send", "B" * 51], None, "job types are 1 to 50"),
    ("Invoice", ["Send", "Bb\n"], None, "job types are 1 to 50"),
    ("Invoice", ["A", "B"], "invoice job\n", "lower-case words"),
    ("Invoice", ["A", "B"], "a very long noun for a job", "20 characters at most"),
    ("HeapQueue", ["A", "B"], None, "exists already"),  # the message queue's table
    ("Heapqueue", ["A", "B"], None, "exists already"),  # the same name to SQL Server
])
def test_new_queue_refuses_bad_input_and_writes_nothing(tmp_path: Path, name: str, types: list[str],
                                                          noun: str | None, problem: str) -> None:
    root = _project(tmp_path)
    catalogue = (root / CATALOGUE).read_text()
    files = sorted(p for p in root.rglob("*") if p.is_file())
    with pytest.raises(RelqError, match=problem):
        new_queue(root, name, types, noun)
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
    new_queue(root, "Invoice", ["InvoicePdf", "InvoiceXml"])
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
    path, text = queue_renders(sync)[0]
    (root / path).write_text(text.replace("BEGIN", "BEGIN -- drifted", 1))
    assert write(root) == [path]
    assert (root / path).read_text() == text
    assert write(root) == []  # a second run changes nothing


def test_a_broken_catalogue_is_one_readable_line(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / CATALOGUE).write_text('[[queue]]\nname = "X"\n')
    with pytest.raises(RelqError, match="queue 1 lacks 'prefix'"):
        load(root)
    (root / CATALOGUE).write_text("[[queue]\n")
    with pytest.raises(RelqError, match=CATALOGUE):
        load(root)
    (root / CATALOGUE).write_text("# no queues\n")
    with pytest.raises(RelqError, match="at least one"):
        load(root)
