"""relq.db with hostile connection strings: whatever a password holds (';', '}', '=', braces,
'}}', quotes, spaces), however it is keyed (PWD, Password, ' pwd ', twice), wherever else it
is repeated, and however the string breaks the grammar, no part of it reaches mask(),
describe(), a Target, parse()'s error or a driver's message that echoes the string."""

from __future__ import annotations

import pytest

from relq import db
from relq.errors import RelqError


class FakeError(Exception):
    """Shaped like pyodbc.Error: args are (sqlstate, message)."""


# (connection string, the password and its revealing fragments)
HOSTILE = [
    pytest.param("SERVER=h;UID=sa;PWD=S3cr;}=t!Pw;DATABASE=relq", ["S3cr", "t!Pw"], id="semicolon-brace"),
    pytest.param("SERVER=h;UID=sa;PWD={S3cr;}=t!Pw;DATABASE=relq", ["S3cr", "t!Pw"], id="unescaped-brace"),
    pytest.param("SERVER=h;UID=sa;PWD={S3cr;}}=t!Pw};DATABASE=relq", ["S3cr", "t!Pw"], id="escaped-brace"),
    pytest.param("SERVER=h;UID=sa;PWD={}}{;}}!pw};DATABASE=relq", ["}{;}!pw", "!pw"], id="braces-only"),
    pytest.param("SERVER=h;UID=sa;PWD={x;y}z!pw};DATABASE=relq", ["x;y", "z!pw"], id="closed-early"),
    pytest.param('SERVER=h;UID=sa;PWD="Qu0te;d pass";DATABASE=relq', ["Qu0te", "d pass"], id="double-quotes"),
    pytest.param("SERVER=h;UID=sa;PWD='it''s;x1y2';DATABASE=relq", ["it''s", "x1y2"], id="single-quotes"),
    pytest.param("SERVER=h;UID=sa;PWD = {  sp ace;pw  } ;DATABASE=relq", ["sp ace", "ace;pw"], id="spaces"),
    pytest.param("SERVER=h;UID=sa;PWD={a=b;c=d!pw};DATABASE=relq", ["a=b", "c=d!pw"], id="equals-braced"),
    pytest.param("SERVER=h;UID=sa;PWD=k3y=v@l;DATABASE=relq", ["k3y", "v@l"], id="equals"),
    pytest.param("SERVER=h;DATABASE=Rep3at!Pw;APP={relq Rep3at!Pw};UID=sa;PWD=Rep3at!Pw",
                 ["Rep3at", "3at!Pw"], id="repeated-as-database-and-app"),
    pytest.param("SERVER=h;UID=pw7;DATABASE=pw7;PWD=pw7", ["pw7"], id="short-repeated-as-uid-and-database"),
    pytest.param("SERVER=h;UID=sa;Password=Pa55!word;DATABASE=relq", ["Pa55!word"], id="password-key"),
    pytest.param("SERVER=h;UID=sa; pwd =Lc!pw0rd-1;DATABASE=relq", ["Lc!pw0rd"], id="spaced-lowercase-key"),
    pytest.param("PWD=First!pw1;SERVER=h;UID=sa;PASSWORD=Second!pw2", ["First!pw", "Second!pw"],
                 id="two-keys"),
    pytest.param("SERVER=h;UID=sa;PWD=Tr41l!ng;", ["Tr41l!ng"], id="trailing-semicolon"),
    pytest.param("SERVER=h;UID=sa;PWD={Lone!pw;DATABASE=relq", ["Lone!pw"], id="lone-open-brace"),
    pytest.param("SERVER=h;UID=sa;PWD=Lo{ne;p!w;DATABASE=relq", ["Lo{ne", "p!w"], id="brace-inside-unbraced"),
    pytest.param("SERVER=h;UID=sa;PWD=Tail!pw}}", ["Tail!pw"], id="closing-braces-unbraced"),
    pytest.param("SERVER=h;UID=sa;PWD=S3cr3t-Pw;Secret-Tail;DATABASE=relq", ["S3cr3t", "Secret-Tail"],
                 id="tail-without-equals"),
]


def shown(conn_str: str) -> dict[str, str]:
    """Everything relq may show of ``conn_str``, by where it shows it."""
    target = db.Target(conn_str, "--conn")
    echo = f"[unixODBC][Driver Manager]cannot use '{conn_str}' here (0) (SQLDriverConnect)"
    texts = {"mask": db.mask(conn_str), "describe": db.describe(conn_str), "str": str(target),
             "repr": repr(target), "scrub": db._scrub(echo, conn_str),
             "connect_failure": db.connect_failure(conn_str, FakeError("HY000", echo))}
    try:
        db.parse(conn_str)
    except RelqError as exc:
        texts["parse"] = str(exc)
    return texts


@pytest.mark.parametrize(("conn_str", "fragments"), HOSTILE)
def test_no_part_of_a_password_is_ever_shown(conn_str, fragments):
    for where, text in shown(conn_str).items():
        for fragment in fragments:
            assert fragment not in text, f"{where} shows {fragment!r}: {text!r}"


@pytest.mark.parametrize(("conn_str", "fragments"), HOSTILE)
def test_a_message_echoing_the_string_keeps_its_own_words(conn_str, fragments):
    scrubbed = db._scrub(f"[unixODBC]cannot use '{conn_str}' here; check it", conn_str)
    assert scrubbed == f"[unixODBC]cannot use '{db.mask(conn_str)}' here; check it"


@pytest.mark.parametrize(("message", "fragments"), [
    ("cannot use 'UID=sa;PWD=S3cr;}=t!Pw;SERVER=x'", ["S3cr", "t!Pw"]),
    ("cannot use 'UID=sa;PWD={S3cr;}=t!Pw;SERVER=x'", ["S3cr", "t!Pw"]),
    ("cannot use 'UID=sa;PWD={S3cr;}}=t!Pw};SERVER=x'", ["S3cr", "t!Pw"]),
    ("cannot use 'UID=sa;PWD={Lone!pw;SERVER=x'", ["Lone!pw"]),
    ('cannot use \'UID=sa;Password="Qu0te;d pass";SERVER=x\'', ["Qu0te", "d pass"]),
    ("cannot use 'UID=sa; pwd = {  sp ace;pw  } ;SERVER=x'", ["sp ace", "ace;pw"]),
    ("cannot use 'PWD=First!pw1;SERVER=x;PASSWORD=Second!pw2'", ["First!pw", "Second!pw"]),
])
def test_free_text_shows_no_password_without_knowing_the_string(message, fragments):
    masked = db._mask_fallback(message)
    assert masked.startswith("cannot use '")
    for fragment in fragments:
        assert fragment not in masked


@pytest.mark.parametrize("message", [
    "Login failed for user 'sa'.",
    "Cannot open database \"relq\" requested by the login. The login failed.",
    "TCP Provider: Error code 0x2746; the password policy of the server applies",
    "Unable to connect: Adaptive Server is unavailable or does not exist",
])
def test_ordinary_messages_are_left_as_the_driver_wrote_them(message):
    assert db._mask_fallback(message) == message
    assert db._scrub(message, "SERVER=h;UID=sa;PWD=Pa55!word;DATABASE=relq") == message


def test_a_password_that_is_also_the_login_is_masked_where_a_message_names_the_login():
    conn_str = "SERVER=h;UID=pw7;PWD=pw7"
    assert db._scrub("Login failed for user 'pw7'.", conn_str) == "Login failed for user '***'."
    assert db.describe(conn_str) == "server=h, uid=***"


@pytest.mark.parametrize(("conn_str", "position", "reason"), [
    ("PWD=S3cr;}=t!Pw;SERVER=x", 10,
     "a keyword holds only letters, digits, '_' and spaces; put a value that holds ';' in {braces}"),
    ("PWD={S3cr;}=t!Pw;SERVER=x", 11,
     "text follows the '}' that closes a braced value; inside braces, '}' is written '}}'"),
    ("SERVER=h;oops", 10, "expected keyword=value; put a value that holds ';' in {braces}"),
    ("SERVER=h;   oops;UID=sa", 13, "expected keyword=value; put a value that holds ';' in {braces}"),
    ("SERVER=h;=x", 10, "no keyword before '='"),
    ("SERVER=h;PWD={never closed", 14, "a '{' that no '}' closes"),
    ("{", 1, "expected keyword=value; put a value that holds ';' in {braces}"),
    ('SERVER=h;PWD=ab;"c=d";UID=sa', 17,
     "a keyword holds only letters, digits, '_' and spaces; put a value that holds ';' in {braces}"),
])
def test_a_malformed_string_is_one_line_naming_the_character(conn_str, position, reason):
    with pytest.raises(RelqError) as info:
        db.parse(conn_str)
    assert str(info.value) == f"connection string: unreadable at character {position} ({reason})"


@pytest.mark.parametrize(("conn_str", "masked"), [
    ("PWD=S3cr;}=t!Pw;SERVER=x", "PWD=*** … (unreadable from character 10)"),
    ("PWD={S3cr;}=t!Pw;SERVER=x", "… (unreadable from character 11)"),
    ("SERVER=h;UID=sa;PWD=abc;Secret-Tail;DATABASE=x",
     "SERVER=h;UID=sa;PWD=*** … (unreadable from character 25)"),
    ("SERVER=h;PWD={Lone!pw;UID=sa", "SERVER=h … (unreadable from character 14)"),
    ("{", "… (unreadable from character 1)"),
])
def test_mask_of_a_malformed_string_shows_the_pairs_before_the_problem_and_nothing_after(conn_str, masked):
    assert db.mask(conn_str) == masked


@pytest.mark.parametrize(("conn_str", "masked"), [
    ("SERVER=h;PWD=;UID=sa", "SERVER=h;PWD=***;UID=sa"),
    ("SERVER=h;PWD=Tr41l!ng;", "SERVER=h;PWD=***"),
    ("PWD=a;SERVER=h;Password=b; pwd =c", "PWD=***;SERVER=h;Password=***;pwd=***"),
])
def test_every_password_key_is_masked_empty_or_repeated(conn_str, masked):
    assert db.mask(conn_str) == masked
