"""`invoke dashboard`: its options reach the server as given, and bad ones end in one line."""

from __future__ import annotations

import pytest
from invoke import Config, MockContext

import tasks
from relq import db


@pytest.mark.parametrize("kwargs, line", [
    ({"port": "http"}, "dashboard: --port must be a whole number, not 'http'"),
    ({"port": "0"}, "dashboard: --port must be 1-65535, not 0"),
    ({"port": "70000"}, "dashboard: --port must be 1-65535, not 70000"),
    ({"refresh": "soon"}, "dashboard: --refresh must be a whole number, not 'soon'"),
    ({"refresh": "0.2"}, "dashboard: --refresh must be a whole number, not '0.2'"),
    ({"refresh": "0"}, "dashboard: --refresh must be at least 1 (seconds)"),
])
def test_bad_options_are_one_line_before_anything_runs(monkeypatch, kwargs, line) -> None:
    monkeypatch.setattr("relq.dashboard.serve.run", lambda *a, **k: pytest.fail("the dashboard started"))
    with pytest.raises(tasks.Exit) as info:
        tasks.dashboard(MockContext(), **kwargs)
    assert (info.value.message, info.value.code) == (line, 2)


def test_without_a_server_the_dashboard_says_so_in_one_line(monkeypatch) -> None:
    monkeypatch.delenv("RELQ_MSSQL", raising=False)
    with pytest.raises(tasks.Exit) as info:
        tasks.dashboard(MockContext())
    assert info.value.message == ("dashboard: no SQL Server configured: set RELQ_MSSQL to an ODBC connection "
                                  "string, pass --conn, or set relq.mssql in invoke.yaml")


def test_the_options_reach_the_server(monkeypatch) -> None:
    seen = []
    monkeypatch.delenv("RELQ_MSSQL", raising=False)
    monkeypatch.setattr("relq.dashboard.serve.run", lambda target, **kwargs: seen.append((target, kwargs)))
    c = MockContext(config=Config(overrides={"relq": {"mssql": "SERVER=db;PWD=secret"}}))
    tasks.dashboard(c, host="0.0.0.0", port="8080", allow_actions=True, refresh="2")
    [(target, kwargs)] = seen
    assert target == db.Target("SERVER=db;PWD=secret", "invoke.yaml")
    assert (kwargs["host"], kwargs["port"]) == ("0.0.0.0", 8080)
    settings = kwargs["settings"]
    assert (settings.allow_actions, settings.show_personal_data, settings.refresh_s) == (True, False, 2.0)


def test_trusted_proxies_and_the_user_header_reach_the_server(monkeypatch) -> None:
    seen = []
    monkeypatch.setattr("relq.dashboard.serve.run", lambda target, **kwargs: seen.append(kwargs))
    c = MockContext(config=Config(overrides={"relq": {"mssql": "SERVER=db"}}))
    tasks.dashboard(c, trusted_proxy=["10.0.0.2", "10.1.0.0/16, fd00::7"], user_header="X-Forwarded-User")
    tasks.dashboard(c)
    proxied, alone = (kwargs["settings"] for kwargs in seen)
    assert proxied.trusted_proxies == ("10.0.0.2/32", "10.1.0.0/16", "fd00::7/128")
    assert proxied.user_header == "X-Forwarded-User"
    assert (alone.trusted_proxies, alone.user_header) == ((), None)  # none named: trusted from no one


@pytest.mark.parametrize("kwargs, line", [
    ({"trusted_proxy": ["*"]}, "dashboard: --trusted-proxy '*' is not an IP address or network"),
    ({"trusted_proxy": ["proxy.corp"]},
     "dashboard: --trusted-proxy 'proxy.corp' is not an IP address or network"),
    ({"user_header": "X-Forwarded-User"},
     "dashboard: --user-header needs --trusted-proxy: the header is read only from a proxy the "
     "dashboard trusts"),
    ({"trusted_proxy": ["10.0.0.2"], "user_header": "X-Forwarded-For"},
     "dashboard: --user-header 'X-Forwarded-For' is not a header that can name a user"),
])
def test_a_proxy_or_user_header_that_cannot_be_trusted_is_one_line(monkeypatch, kwargs, line) -> None:
    monkeypatch.setattr("relq.dashboard.serve.run", lambda *a, **k: pytest.fail("the dashboard started"))
    c = MockContext(config=Config(overrides={"relq": {"mssql": "SERVER=db"}}))
    with pytest.raises(tasks.Exit) as info:
        tasks.dashboard(c, **kwargs)
    assert info.value.message.startswith(line) and info.value.code == 2
    assert "\n" not in info.value.message
