"""tSQLt installed from its release zip into a real SQL Server, and a run of a
test class. Needs RELQ_MSSQL and a release zip (RELQ_TSQLT_ZIP, or the pinned URL)."""

from __future__ import annotations

import pytest

from relq import db
from relq.deploy.apply import deploy
from relq.live import run_tsqlt, tsqlt_release
from tests.conftest import REPO, Project

pytestmark = pytest.mark.mssql


def test_tsqlt_installs_and_runs_the_fixture_classes(project: Project, mssql, new_database, tmp_path) -> None:
    # no skip: without a verified release the live tier cannot test tSQLt, and says why
    scripts = tsqlt_release(REPO, download_to=tmp_path)
    deploy(project.root, mssql, create_db=new_database)
    result = run_tsqlt(project.root, db.with_database(mssql.conn_str, new_database), scripts,
                       tmp_path / "tsqlt.xml")
    assert (result.tests, result.failures, result.errors) == (5, 0, 0), result.xml
    assert (tmp_path / "tsqlt.xml").read_text().startswith("<")
