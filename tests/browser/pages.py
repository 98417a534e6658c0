"""Reading a rendered map back from the browser's DOM (after its script ran)."""

from __future__ import annotations

from typing import Any

# Every node box on the page, with the domain path it is drawn in and its computed colour.
_STATE_JS = """
const D = JSON.parse(document.getElementById('data').textContent);
function pathOf(el) {
  const out = [];
  for (let d = el.closest('.d, .o'); d; d = d.parentElement.closest('.d, .o')) {
    out.unshift(D.domains[+d.dataset.d][0]);
  }
  return out;
}
const boxes = [...document.querySelectorAll('#map i.n, #outside i.n')].map(el => ({
  name: D.nodes[+el.dataset.n][0],
  where: el.closest('#outside') ? 'outside' : 'map',
  cls: el.className,
  colour: getComputedStyle(el).borderTopColor,
  path: pathOf(el),
  text: el.textContent,
}));
const legend = {};
document.querySelectorAll('#legend [data-state]').forEach(el => {
  legend[el.dataset.state] = getComputedStyle(el).borderTopColor;
});
const outside = [...document.querySelectorAll('#outside li')].map(li => D.nodes[+li.dataset.n][0]);
const hl = [...document.querySelectorAll('#map .d.hl, #map .d.best, #map .o.hl, #map .o.best')]
  .map(el => ({role: el.classList.contains('hl') ? 'placement' : 'best', path: pathOf(el)}));
// The overview's rows: each domain's path, its text and the width of its "in use" bar.
const rows = [...document.querySelectorAll('#map .r[data-o]')].map(el => ({
  path: pathOf(el), text: el.innerText,
  used: el.querySelector('.bar .u') ? el.querySelector('.bar .u').style.width : null}));
const out = document.querySelector('#map .r.out');
return {boxes, legend, outside, hl, rows, outsideRow: out ? out.innerText : null,
        elements: document.getElementsByTagName('*').length, states: D.states,
        info: document.getElementById('info').innerText,
        found: document.getElementById('found').textContent,
        renderMs: +document.documentElement.dataset.renderMs};
"""


def page_state(driver: Any) -> dict[str, Any]:
    state: dict[str, Any] = driver.execute_script(_STATE_JS)
    return state


def open_page(driver: Any, url: str) -> dict[str, Any]:
    driver.get(url)
    return page_state(driver)
