"""Progress output: a bar redrawn on stderr on a terminal, plain lines otherwise."""

from __future__ import annotations

import io

from labeler.base.progress import Progress


def test_bar_is_cleared_around_result_lines() -> None:
    out, err = io.StringIO(), io.StringIO()
    p = Progress(4, label="apply", out=out, err=err, bar=True)
    p.line("n1: add k=v")
    p.advance()
    p.close()
    assert out.getvalue() == "n1: add k=v\n"
    assert "\r\033[K" in err.getvalue()
    assert "1/4" in err.getvalue()
    assert err.getvalue().endswith("\r\033[K")


def test_no_bar_off_a_terminal() -> None:
    out, err = io.StringIO(), io.StringIO()
    p = Progress(3, label="apply", out=out, err=err, every=0.0)
    assert p.bar is False  # StringIO is not a terminal
    p.line("n1: add k=v")
    p.advance()
    p.advance()
    p.advance()  # the last one is covered by the summary
    p.close()
    assert out.getvalue() == "n1: add k=v\n"
    assert err.getvalue() == "progress: 1/3 apply\nprogress: 2/3 apply\n"
