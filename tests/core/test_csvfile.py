"""The label CSV reader: MindCluster's format, validated as a whole with file:line:column."""

from __future__ import annotations

import io

import pytest

from labeler.base.errors import InputError
from labeler.core.sheet import parse_label_csv, read_label_csv, write_label_csv

G = "huawei.com/topotree.groupid"
T = "huawei.com/topotree"


def problems(data: bytes | str) -> list[str]:
    with pytest.raises(InputError) as e:
        parse_label_csv(data, "x.csv")
    return e.value.problems


def test_reads_keys_in_any_order_and_empty_cells() -> None:
    sheet = parse_label_csv(f"nodeName,{T},{G},a.b/c\nn1,t,3,\nn2,,4,x\n", "x.csv")
    assert sheet.keys == (T, G, "a.b/c")
    assert [r.node for r in sheet.rows] == ["n1", "n2"]
    assert sheet.rows[0].values == {T: "t", G: "3"}
    assert sheet.rows[0].empty == ("a.b/c",)
    assert sheet.rows[1].values == {G: "4", "a.b/c": "x"}
    assert [r.line for r in sheet.rows] == [2, 3]


@pytest.mark.parametrize(
    "data",
    [
        b"\xef\xbb\xbfnodeName,k\r\nn1,v\r\n",  # BOM + CRLF (Excel "CSV UTF-8", MindCluster LLD)
        b"nodeName,k\nn1,v",  # LF, no final newline
        b"nodeName,k\r\n\r\nn1,v\r\n,\r\n\r\n",  # blank lines and an all-empty row
    ],
)
def test_bom_and_line_ends(data: bytes) -> None:
    sheet = parse_label_csv(data, "x.csv")
    assert sheet.keys == ("k",)
    assert [(r.node, dict(r.values)) for r in sheet.rows] == [("n1", {"k": "v"})]


def test_line_numbers_count_blank_lines() -> None:
    sheet = parse_label_csv("nodeName,k\n\nn1,v\n\n\nn2,w\n", "x.csv")
    assert [r.line for r in sheet.rows] == [3, 6]


def test_empty_file() -> None:
    for data in (b"", b"\xef\xbb\xbf", b"\n\n  \n"):
        (p,) = problems(data)
        assert p.startswith("x.csv:1: the file is empty")
        assert "nodeName" in p


def test_missing_file(tmp_path: object) -> None:
    with pytest.raises(InputError, match="no such file; check --config-path"):
        read_label_csv("/nonexistent/x.csv")


def test_first_header_must_be_nodeName() -> None:
    (p,) = problems("node,k\nn1,v\n")
    assert p.startswith("x.csv:1:1: first header is 'node'")
    (p,) = problems("NodeName,k\nn1,v\n")
    assert "rename it to exactly 'nodeName'" in p
    (p,) = problems(" nodeName,k\nn1,v\n")
    assert "rename it to exactly 'nodeName'" in p


def test_semicolon_separated_file_gets_a_hint() -> None:
    (p,) = problems("nodeName;k\nn1;v\n")
    assert "comma-separated" in p and "';'" in p


def test_header_without_label_columns() -> None:
    (p,) = problems("nodeName\nn1\n")
    assert "x.csv:1: the header has no label columns" in p


def test_every_problem_is_reported_with_line_and_column() -> None:
    data = (
        "nodeName,k,k,bad key,,Pre.Fix/x\n"  # dup key, invalid key, empty header, bad prefix
        "n1,a,b,c,d,e\n"
        "n1,a,b,c,d,e\n"  # duplicate node
        "N_2,a,b,c,d,e\n"  # invalid node name
        "n3,a,b,c\n"  # ragged (short)
        "n4,a,b,c,d,e,f\n"  # ragged (long)
        f"n5,{'v' * 64},-x,ok,d,e\n"  # value too long, value bad characters
        ",a,b,c,d,e\n"  # values without a node name
    )
    ps = problems(data)
    expected = [
        "x.csv:1:3: label key 'k' repeats column 2",
        "x.csv:1:4: invalid label key 'bad key'",
        "x.csv:1:5: empty header",
        "x.csv:1:6: invalid label key 'Pre.Fix/x'",
        "x.csv:3:1: node 'n1' already has a row on line 2",
        "x.csv:4:1: 'N_2' is not a valid node name",
        "x.csv:5:5: 4 cells but the header has 6 columns",
        "x.csv:6:7: 7 cells but the header has 6 columns",
        "x.csv:7:2: invalid value 'vvvv",
        "x.csv:7:3: invalid value '-x'",
        "x.csv:8:1: the row has values but no node name",
    ]
    assert len(ps) == len(expected), ps
    for p, want in zip(ps, expected, strict=True):
        assert p.startswith(want), (p, want)
    assert "64 characters; at most 63" in ps[8]


def test_error_message_has_heading_and_says_nothing_was_written() -> None:
    with pytest.raises(InputError) as e:
        parse_label_csv("nodeName,k\nn1,a b\nn2,c d\n", "x.csv")
    text = str(e.value)
    assert text.splitlines()[0] == "x.csv: 2 problem(s); nothing written:"
    assert "  x.csv:2:2: invalid value 'a b' for k" in text
    assert "fix the cell" in text


def test_spaces_around_values_and_keys_are_reported() -> None:
    ps = problems("nodeName, k\nn1, v\n")
    assert "has spaces around it" in ps[0]
    assert ps[1].startswith("x.csv:2:2: invalid value ' v'")


def test_bad_encoding_names_line_and_column() -> None:
    data = b"nodeName,k\nn1,v\nn2," + "组".encode("gbk") + b"\n"
    (p,) = problems(data)
    assert p.startswith("x.csv:3:4: not valid UTF-8")
    assert "save it as UTF-8" in p


def test_utf16_is_rejected_with_a_fix() -> None:
    (p,) = problems("nodeName,k\nn1,v\n".encode("utf-16"))
    assert "UTF-16" in p and "UTF-8" in p


def test_control_characters_are_invalid_values() -> None:
    (p,) = problems(b"nodeName,k\nn1,v\x00\n")
    assert p.startswith("x.csv:2:2: invalid value 'v\\x00'")


def test_unterminated_quote_is_malformed_csv() -> None:
    (p,) = problems('nodeName,k\nn1,"v\n')
    assert p.startswith("x.csv:") and "malformed CSV" in p


def test_header_only_file_has_no_rows() -> None:
    (p,) = problems("nodeName,k\n")
    assert "no node rows" in p


def test_quoted_cell_spanning_lines_keeps_line_numbers() -> None:
    ps = problems('nodeName,k\nn1,"a\nb"\nn2,"x y"\n')
    assert ps[0].startswith("x.csv:2:2: invalid value 'a\\nb'")
    assert ps[1].startswith("x.csv:4:2: invalid value 'x y'")


def test_rows_without_values_are_kept_for_the_command_to_decide() -> None:
    sheet = parse_label_csv("nodeName,a,b\nn1,,\nn2,1,\n", "x.csv")
    assert sheet.rows[0].values == {} and sheet.rows[0].empty == ("a", "b")


def test_write_round_trips_without_bom() -> None:
    buf = io.StringIO()
    n = write_label_csv(buf, [G, T], [("n1", {G: "0", T: "t"}), ("n2", {T: "t"})])
    assert n == 2
    text = buf.getvalue()
    assert text == f"nodeName,{G},{T}\nn1,0,t\nn2,,t\n"
    sheet = parse_label_csv(text.encode(), "x.csv")
    assert sheet.rows[1].values == {T: "t"}
