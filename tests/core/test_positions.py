"""The CSV placement reader: format, BOM, errors with line numbers, tree scope.

The file is read by labeler.core.sheet (the bulk tool's validator), so the messages are its
``file:line:column`` ones.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labeler.base.errors import InputError
from labeler.core.positions import parse_csv, read_csv
from labeler.core.profiles import ascend_superpod, oci_rdma

OCI = oci_rdma().topology
K = "oci.oraclecloud.com/rdma."
HEADER = f"nodeName,{K}local_block_id,{K}hpc_island_id,{K}network_block_id\n"


def test_columns_in_any_order_bom_and_empty_cells(tmp_path: Path) -> None:
    f = tmp_path / "c.csv"
    f.write_bytes(("\ufeff" + HEADER + "n2,l1,i1,b1\nn1,,i1,b1\n\n").encode("utf-8"))
    ps = read_csv(f, OCI)
    assert [(p.node, p.values) for p in ps.positions] == [
        ("n1", ("i1", "b1", None)),
        ("n2", ("i1", "b1", "l1")),
    ]


def test_every_problem_is_reported_with_its_line() -> None:
    text = HEADER + "n1,l,i,b\nN_2,l,i,b\nn1,l,i,b\nn3,l,i\n"
    with pytest.raises(InputError) as e:
        parse_csv(text, OCI, origin="c.csv")
    msg = str(e.value)
    assert "c.csv:3:1: 'N_2' is not a valid node name" in msg
    assert "c.csv:4:1: node 'n1' already has a row on line 2" in msg
    assert "c.csv:5:4: 3 cells but the header has 4 columns" in msg


def test_header_problems() -> None:
    with pytest.raises(InputError, match="first column must be 'nodeName'"):
        parse_csv("name,a/b\n", OCI, origin="c.csv")
    with pytest.raises(InputError, match="no column for level label"):
        parse_csv(f"nodeName,{K}local_block_id\nn1,l1\n", OCI, origin="c.csv")
    with pytest.raises(InputError, match="empty"):
        parse_csv("", OCI, origin="c.csv")


def test_not_utf8_and_missing_file(tmp_path: Path) -> None:
    f = tmp_path / "c.csv"
    f.write_bytes(b"nodeName,\xff\n")
    with pytest.raises(InputError, match="not valid UTF-8"):
        read_csv(f, OCI)
    with pytest.raises(InputError, match="no such file; check --from-csv"):
        read_csv(tmp_path / "nope.csv", OCI)


def test_tree_scope_for_ascend() -> None:
    topo = ascend_superpod("t1").topology
    text = (
        "nodeName,huawei.com/topotree,huawei.com/topotree.groupid,huawei.com/topotree.superpodid\n"
        "a,t1,0,0\nb,t2,0,1\nc,,0,0\n"
    )
    ps = parse_csv(text, topo, origin="x")
    assert [p.node for p in ps.positions] == ["a"]  # c has no tree label: tree 'default'
    assert ps.out_of_scope == 2
    default = parse_csv(text, ascend_superpod().topology, origin="x")
    assert [p.node for p in default.positions] == ["c"]


def test_same_rules_as_the_bulk_tool() -> None:
    """Spaces around a value, an invalid value and a header-only file fail here as in apply."""
    with pytest.raises(InputError) as e:
        parse_csv(HEADER + "n1, l1,i1,b1\nn2,l/1,i1,b1\n", OCI, origin="c.csv")
    problems = str(e.value)
    assert "c.csv:2:2: invalid value ' l1'" in problems and "spaces around it" in problems
    assert "c.csv:3:2: invalid value 'l/1'" in problems
    with pytest.raises(InputError, match="a header but no node rows"):
        parse_csv(HEADER, OCI, origin="c.csv")
    with pytest.raises(InputError, match="not valid UTF-8"):
        parse_csv(HEADER.encode() + b"n1,\xff,i,b\n", OCI, origin="c.csv")
