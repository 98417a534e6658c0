"""Benchmark: the topology map of N nodes: build, render, file size, and the time a headless
Chromium takes from navigation start until the page has drawn (layout included), in the
view a map of that size opens on (the overview above 1,000 nodes) and in the box view.

Run by hand: ``python bench/map.py [--nodes 10000]`` (needs Debian's chromium and
chromium-driver, and selenium from the test extras). The nodes are tests/topomap/big.py's:
16 labels each like a real GPU node (4 of them unique to it), 8 GPUs, some busy; 3 %
partial, 2 % unlabeled, 1 % tainted.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from labeler.topomap.render import render_html
from tests.browser.browser import start_browser
from tests.topomap.big import map_of, nodes

COUNT_JS = """return [document.querySelectorAll('i.n').length,
  document.querySelectorAll('*').length, document.querySelector('.views b').textContent]"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3, help="browser loads (the median is shown)")
    args = ap.parse_args()
    data = nodes(args.nodes)

    t0 = time.perf_counter()
    topo = map_of(data)
    t1 = time.perf_counter()
    page = render_html(topo)
    t2 = time.perf_counter()
    size = len(page.encode())

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "map.html"
        path.write_text(page, encoding="utf-8")
        driver = start_browser()
        try:
            for view in ("", "#view=boxes"):
                render_ms, load_s = [], []
                for _ in range(args.runs):
                    driver.get("about:blank")
                    started = time.perf_counter()
                    driver.get(path.as_uri() + view)
                    load_s.append(time.perf_counter() - started)
                    render_ms.append(int(driver.execute_script(
                        "return +document.documentElement.dataset.renderMs")))  # fmt: skip
                    boxes, elements, shown = driver.execute_script(COUNT_JS)
                render_ms.sort()
                load_s.sort()
                print(
                    f"view={shown}: drawn {render_ms[len(render_ms) // 2]} ms after navigation "
                    f"start (runs: {render_ms}); driver.get returned after "
                    f"{load_s[len(load_s) // 2]:.2f}s; {boxes} node boxes, {elements} elements"
                )
        finally:
            driver.quit()
    print(f"nodes={args.nodes} domains={len(topo.domains)}")
    print(f"build={t1 - t0:.2f}s render_html={t2 - t1:.2f}s size={size / 1e6:.2f}MB")


if __name__ == "__main__":
    main()
