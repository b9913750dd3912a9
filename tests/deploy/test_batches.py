"""split_batches cuts a script at its GO lines as sqlcmd does, and only there."""

from __future__ import annotations

from pathlib import Path

import pytest

from relq.deploy.batches import Batch, split_batches
from relq.errors import RelqError

ROOT = Path(__file__).resolve().parent.parent.parent


def sqls(text: str) -> list[str]:
    return [batch.sql for batch in split_batches(text)]


def test_splits_at_go_lines():
    assert split_batches("SELECT 1;\nGO\nSELECT 2;\nGO\n") == [
        Batch(sql="SELECT 1;", line=1),
        Batch(sql="SELECT 2;", line=3),
    ]


def test_go_is_case_insensitive_and_may_be_indented_and_commented():
    text = "SELECT 1;\n  go\nSELECT 2;\n\tGo   -- end of part two\nSELECT 3;\ngO--tight\nSELECT 4;\n"
    assert sqls(text) == ["SELECT 1;", "SELECT 2;", "SELECT 3;", "SELECT 4;"]


def test_go_with_a_count_repeats_the_batch():
    assert split_batches("INSERT t DEFAULT VALUES;\nGO 5\nSELECT 1;\nGO 2 -- twice\n") == [
        Batch(sql="INSERT t DEFAULT VALUES;", line=1, count=5),
        Batch(sql="SELECT 1;", line=3, count=2),
    ]


@pytest.mark.parametrize("go", ["GO 0", "GO -1", "GO x", "GO 1.5", "GO 2x"])
def test_a_count_that_is_not_a_positive_whole_number_is_refused_with_its_line(go: str):
    text = "SELECT 1;\nGO\n\nSELECT 2;\n" + go + "\n"
    with pytest.raises(RelqError, match=r"^line 5: .*the count must be a positive whole number$"):
        split_batches(text)


def test_go_0_message_names_line_and_separator():
    with pytest.raises(RelqError) as raised:
        split_batches("SELECT 1;\nGO 0\n")
    assert str(raised.value) == "line 2: GO 0: the count must be a positive whole number"


def test_go_inside_a_string_spanning_lines_is_text():
    text = "SELECT 'one\nGO\ntwo';\nGO\nSELECT 2;\n"
    assert sqls(text) == ["SELECT 'one\nGO\ntwo';", "SELECT 2;"]


def test_escaped_quotes_do_not_end_the_string():
    text = "SELECT 'it''s\nGO\n''quoted''';\nGO\nSELECT 2;\n"
    assert sqls(text) == ["SELECT 'it''s\nGO\n''quoted''';", "SELECT 2;"]


def test_a_quote_closing_a_line_does_not_pair_with_one_opening_the_next():
    text = "SELECT 'a'\n'b';\nGO\nSELECT 2;\n"
    assert sqls(text) == ["SELECT 'a'\n'b';", "SELECT 2;"]


def test_go_inside_a_unicode_string_is_text():
    text = "PRINT N'first\nGO\nlast';\nGO\nSELECT 2;\n"
    assert sqls(text) == ["PRINT N'first\nGO\nlast';", "SELECT 2;"]


def test_go_inside_a_bracketed_identifier_with_escaped_bracket_is_text():
    text = "SELECT 1 AS [odd]]\nGO\nname];\nGO\nSELECT 2;\n"
    assert sqls(text) == ["SELECT 1 AS [odd]]\nGO\nname];", "SELECT 2;"]


def test_go_inside_a_double_quoted_identifier_is_text():
    text = 'SELECT 1 AS "odd""\nGO\nname";\nGO\nSELECT 2;\n'
    assert sqls(text) == ['SELECT 1 AS "odd""\nGO\nname";', "SELECT 2;"]


def test_go_after_a_line_comment_is_text():
    text = "SELECT 1; -- GO\n-- GO\nSELECT 2;\nGO\n"
    assert sqls(text) == ["SELECT 1; -- GO\n-- GO\nSELECT 2;"]


def test_quotes_in_a_line_comment_do_not_open_a_string():
    text = "SELECT 1; -- it's\nGO\nSELECT 2;\n"
    assert sqls(text) == ["SELECT 1; -- it's", "SELECT 2;"]


def test_go_inside_a_block_comment_is_text():
    text = "/* a note\nGO\n it's done */\nSELECT 1;\nGO\nSELECT 2;\n"
    assert sqls(text) == ["/* a note\nGO\n it's done */\nSELECT 1;", "SELECT 2;"]


def test_block_comments_nest():
    text = "/* outer /* inner */\nGO\nstill outer */\nSELECT 1;\nGO\nSELECT 2;\n"
    assert sqls(text) == ["/* outer /* inner */\nGO\nstill outer */\nSELECT 1;", "SELECT 2;"]


def test_go_after_a_closed_block_comment_separates():
    assert sqls("/* x */ SELECT 1;\nGO\nSELECT 2;\n") == ["/* x */ SELECT 1;", "SELECT 2;"]


@pytest.mark.parametrize("line", ["GO;", "go;", "GOTO EXIT_ERROR;", "GO_ON = 1", "GOTO label"])
def test_lines_that_merely_start_with_go_are_text(line: str):
    text = f"SELECT 1;\n{line}\nSELECT 2;\n"
    assert sqls(text) == [text.rstrip("\n")]


def test_a_label_line_is_untouched():
    text = "BEGIN\n    GOTO EXIT_ERROR;\nEXIT_ERROR:\n    RETURN 1;\nEND;\nGO\n"
    assert split_batches(text) == [Batch(sql=text.removesuffix("\nGO\n"), line=1)]


def test_line_numbers_point_at_each_batch_first_line_even_if_blank():
    text = "SET NOCOUNT ON;\nGO\n\n/* two */\nSELECT 2;\nGO 3\nSELECT\n  'x\ny';\nGO\n\n\nSELECT 4;"
    assert split_batches(text) == [
        Batch(sql="SET NOCOUNT ON;", line=1),
        Batch(sql="\n/* two */\nSELECT 2;", line=3, count=3),
        Batch(sql="SELECT\n  'x\ny';", line=7),
        Batch(sql="\n\nSELECT 4;", line=11),
    ]


def test_an_error_line_in_a_batch_maps_to_the_file_line():
    text = "SELECT 1;\nGO\n\nSELECT 2;\nSELECT oops;\n"
    [_, batch] = split_batches(text)
    error_line = batch.sql.split("\n").index("SELECT oops;") + 1
    assert batch.line + error_line - 1 == text.split("\n").index("SELECT oops;") + 1


def test_crlf_cr_and_a_bom_give_the_same_batches_and_lines_as_lf():
    lf = "SELECT 1;\nGO\n\nSELECT 'a\nGO\nb';\nGO 2\n/* c\n*/\nSELECT 3;\n"
    expected = split_batches(lf)
    assert [batch.line for batch in expected] == [1, 3, 8]
    assert split_batches(lf.replace("\n", "\r\n")) == expected
    assert split_batches(lf.replace("\n", "\r")) == expected
    assert split_batches("\ufeff" + lf.replace("\n", "\r\n")) == expected
    assert split_batches("\ufeff" + lf) == expected


def test_text_after_the_last_go_is_a_final_batch():
    assert split_batches("SELECT 1;\nGO\nSELECT 2;") == [
        Batch(sql="SELECT 1;", line=1),
        Batch(sql="SELECT 2;", line=3),
    ]
    assert split_batches("SELECT 1;\n") == [Batch(sql="SELECT 1;", line=1)]


def test_whitespace_only_batches_are_dropped_but_comment_only_ones_kept():
    text = "\n  \nGO\nSELECT 1;\nGO\n\t\nGO\nGO\n-- a note\nGO\n   \n"
    assert split_batches(text) == [
        Batch(sql="SELECT 1;", line=4),
        Batch(sql="-- a note", line=9),
    ]
    assert split_batches("") == []
    assert split_batches("GO\n\n") == []


def test_an_unterminated_string_or_comment_is_returned_as_it_is():
    assert sqls("SELECT 1;\nGO\nSELECT 'open;\nGO\n") == ["SELECT 1;", "SELECT 'open;\nGO"]
    assert sqls("/* open /* */\nGO\n") == ["/* open /* */\nGO"]


def test_no_batch_of_the_project_or_the_clean_fixture_keeps_a_go_line():
    files = sorted(ROOT.glob("database/**/*.sql")) + sorted(
        ROOT.glob("tests/fixtures/clean/database/**/*.sql")
    )
    assert files
    for file in files:
        batches = split_batches(file.read_text(encoding="utf-8"))
        assert batches, file
        for batch in batches:
            lines = [line.strip().upper() for line in batch.sql.split("\n")]
            assert "GO" not in lines, f"{file}:{batch.line}"
