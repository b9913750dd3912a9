"""Installing tSQLt from a release zip, and reading its results: the offline parts."""

from __future__ import annotations

import hashlib
import re
import zipfile
from pathlib import Path

import pytest

from relq.deploy import tsqlt
from relq.deploy.tsqlt import SCRIPTS, pinned, read_release, summarize
from relq.errors import RelqError
from relq.live import TSQLT_SHA256, tsqlt_release

REPO = Path(__file__).resolve().parents[2]


def release_zip(tmp_path: Path, names=("tSQLt/PrepareServer.sql", "tSQLt/tSQLt.class.sql")) -> Path:
    path = tmp_path / "tSQLt.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name in names:
            archive.writestr(name, "\ufeffPRINT 'hello';\nGO\n")
        archive.writestr("tSQLt/Example.sql", "PRINT 'example';")
    return path


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_release_with_its_pinned_checksum_yields_both_scripts(tmp_path: Path) -> None:
    path = release_zip(tmp_path)
    scripts = read_release(path, sha(path).upper())
    assert set(scripts) == {"PrepareServer.sql", "tSQLt.class.sql"}
    assert scripts["tSQLt.class.sql"] == "PRINT 'hello';\nGO\n"  # BOM dropped


def test_a_zip_with_another_checksum_is_refused(tmp_path: Path) -> None:
    path = release_zip(tmp_path)
    with pytest.raises(RelqError, match="refusing to install a tSQLt release nobody vetted"):
        read_release(path, "0" * 64)


def test_no_pin_means_no_install(tmp_path: Path) -> None:
    with pytest.raises(RelqError, match=r"no SHA-256 pinned .* \[tool.relq.tsqlt\] sha256"):
        read_release(release_zip(tmp_path), "")


def test_a_zip_without_the_install_scripts_is_not_a_release(tmp_path: Path) -> None:
    path = release_zip(tmp_path, names=("tSQLt/PrepareServer.sql",))
    with pytest.raises(RelqError, match=r"not a tSQLt release: tSQLt\.class\.sql missing"):
        read_release(path, sha(path))


def test_the_pin_is_one_versioned_release_and_its_hash() -> None:
    pin = pinned(REPO)
    # A URL that serves whatever is newest would break the hash with every tSQLt release.
    assert re.fullmatch(r"https://\S+/tSQLt_V\d+(\.\d+){3}\.zip", pin.url), pin.url
    assert re.fullmatch(r"[0-9a-f]{64}", pin.sha256), pin.sha256


def test_another_release_comes_with_its_own_hash(tmp_path: Path) -> None:
    path = release_zip(tmp_path)
    assert set(tsqlt_release(REPO, str(path), sha256=sha(path), environ={})) == set(SCRIPTS)
    assert set(tsqlt_release(REPO, str(path), environ={TSQLT_SHA256: sha(path)})) == set(SCRIPTS)
    with pytest.raises(RelqError, match=f"but {pinned(REPO).sha256} is pinned"):
        tsqlt_release(REPO, str(path), environ={})


def test_junit_results_are_counted_from_the_xml() -> None:
    xml = """<testsuites><testsuite name="Next_JobTests" tests="3" errors="0" failures="1">
      <testcase classname="Next_JobTests" name="test a"/>
      <testcase classname="Next_JobTests" name="test b"><failure message="expected 1"/></testcase>
      <testcase classname="Next_JobTests" name="test c"/>
    </testsuite></testsuites>"""
    result = summarize(xml)
    assert (result.tests, result.failures, result.errors, result.ok) == (3, 1, 0, False)


def test_a_run_with_no_tests_is_not_a_pass() -> None:
    assert not summarize("<testsuites/>").ok


class _Download:
    """urlopen's answer: the zip's bytes."""

    def __enter__(self):
        return self

    def __exit__(self, *_) -> None:
        return None

    def read(self) -> bytes:
        return b"zip"


def test_a_download_that_fails_is_tried_three_times_then_named_in_one_line(tmp_path, monkeypatch) -> None:
    answers = [OSError("timed out"), OSError("connection reset"), _Download()]

    def urlopen(url, timeout):
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(tsqlt.urllib.request, "urlopen", urlopen)
    waited: list[float] = []
    url, dest = "https://tsqlt.org/x.zip", tmp_path / "t.zip"
    assert tsqlt.fetch(url, dest, sleep=waited.append).read_bytes() == b"zip"
    assert waited == list(tsqlt.RETRY_WAITS)

    answers[:] = [OSError("down")] * 3
    with pytest.raises(RelqError, match=r"from https://tsqlt.org/x.zip \(three tries\): down; pass --zip"):
        tsqlt.fetch(url, dest, sleep=waited.append)
