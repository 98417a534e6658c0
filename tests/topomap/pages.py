"""Reading a rendered map back from the browser's DOM (after its script ran)."""

from __future__ import annotations

from typing import Any

# Every node box on the page, with the domain path it is drawn in and its computed colour.
_STATE_JS = """
const D = JSON.parse(document.getElementById('data').textContent);
function pathOf(el) {
  const out = [];
  for (let d = el.closest('.d'); d; d = d.parentElement.closest('.d')) {
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
const hl = [...document.querySelectorAll('#map .d.hl, #map .d.best')].map(el => ({
  role: el.classList.contains('hl') ? 'placement' : 'best', path: pathOf(el)}));
return {boxes, legend, outside, hl, states: D.states,
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
