"""The map as one self-contained HTML page: inline CSS, inline script, inline JSON data.

Nothing on the page asks the network for anything (no external script, style, font or
image), so the file can be mailed, attached to a ticket or opened on an air-gapped host.
The script (``map.js``, ours, no library) draws the nested boxes in the browser from the
JSON, which keeps the file small: a node is one short array, not a block of markup.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path

from labeler.base.files import write_atomic
from labeler.topomap.model import TopologyMap

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{css}</style>
</head><body>
<header><h1>{title}</h1><span id="summary"></span>
<label>Find a node <input id="search" type="search" placeholder="node name" autocomplete="off">
</label><span id="found"></span></header>
<div id="legend"></div>
<div id="job"></div>
<nav id="crumbs"></nav>
<main><div id="left"><div id="map"></div><section id="outside"></section></div>
<aside id="info">Hover or click a node for its labels, position, free capacity and taints.
</aside></main>
<script type="application/json" id="data">{data}</script>
<script>{js}</script>
</body></html>
"""


def _asset(name: str) -> str:
    return resources.files("labeler.topomap").joinpath(name).read_text(encoding="utf-8")


def render_html(topo: TopologyMap) -> str:
    data = json.dumps(topo.to_json(), separators=(",", ":"), ensure_ascii=False)
    # Inside <script>, only "</" can end the element early; "<\\/" is the same JSON string.
    data = data.replace("</", "<\\/")
    return _PAGE.format(
        title=html.escape(topo.title), css=_asset("map.css"), js=_asset("map.js"), data=data
    )


def write_html(path: str | Path, topo: TopologyMap) -> Path:
    """Write the page atomically; an unwritable path is an InputError naming it."""
    write_atomic(path, render_html(topo))
    return Path(path)
