// The topology map: draws the JSON in #data as nested boxes. Plain DOM, no library; the
// whole map is built as one HTML string and set once, which keeps 10,000 nodes fast.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("data").textContent);
  var N = D.nodes, M = D.domains, L = D.levels, job = D.job || null;
  var kids = M.map(function () { return []; }), here = M.map(function () { return []; });
  var roots = [], outside = [], byName = {}, focus = -1, picked = -1;
  M.forEach(function (d, i) { (d[2] < 0 ? roots : kids[d[2]]).push(i); });
  N.forEach(function (n, i) { (n[2] < 0 ? outside : here[n[2]]).push(i); byName[n[0]] = i; });
  var $ = function (id) { return document.getElementById(id); };

  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c];
    });
  }
  function cap(free, total) { return (free < 0 ? "?" : free) + "/" + total; }
  function shade(n) { return n[4] < 0 || n[3] <= 0 ? "fu" : "f" + Math.round((4 * n[4]) / n[3]); }
  function path(d) {
    var out = [];
    for (; d >= 0; d = M[d][2]) out.unshift(d);
    return out;
  }
  function box(i) {
    var n = N[i], c = "n s" + n[1] + " " + shade(n), t = "";
    if (job && n[8] > 0) { c += " p"; t = n[8]; } else if (job && n[9]) c += " b";
    return '<i class="' + c + '" data-n="' + i + '" title="' + esc(n[0]) + '">' + t + "</i>";
  }
  function domain(i) {
    var d = M[i], c = "d";
    if (job && job.domain === i) c += job.role === "placement" ? " hl" : " best";
    var risk = D.marks && D.marks[i], tip = risk ? ' title="' + esc(risk) + '"' : "";
    if (risk) c += " risk";
    var h = ['<div class="' + c + '" data-d="' + i + '"' + tip + '><div class="dh" data-d="' + i + '"><b>' +
      esc(L[d[1]] + " " + d[0]) + "</b> " + d[3] + " node(s), " + cap(d[5], d[4]) +
      ' free</div><div class="dc">'];
    kids[i].forEach(function (k) { h.push(domain(k)); });
    if (here[i].length) h.push('<div class="ns">' + here[i].map(box).join("") + "</div>");
    h.push("</div></div>");
    return h.join("");
  }
  function draw() {
    $("map").innerHTML = (focus < 0 ? roots : [focus]).map(domain).join("");
    var c = ['<a data-f="-1">all domains</a>'];
    if (focus >= 0) path(focus).forEach(function (d) {
      c.push('<a data-f="' + d + '">' + esc(L[M[d][1]] + " " + M[d][0]) + "</a>");
    });
    $("crumbs").innerHTML = c.join(" › ") + (focus >= 0 ? "" : " <small>(click a domain to zoom in)</small>");
    if (picked >= 0) mark(picked, "sel");
    var want = focus < 0 ? "" : "#focus=" + path(focus).map(function (d) { return M[d][0]; }).join("/");
    if (location.hash !== want) history.replaceState(null, "", want || location.pathname + location.search);
  }
  function mark(i, cls) {
    var el = document.querySelector('#map [data-n="' + i + '"], #outside [data-n="' + i + '"]');
    if (el) { (el.tagName === "I" ? el : el.firstChild).classList.add(cls); }
    return el;
  }
  function show(i) {
    var n = N[i], h = ["<h2>" + esc(n[0]) + "</h2><dl><dt>state</dt><dd>" + D.states[n[1]] + "</dd>"];
    h.push("<dt>position</dt><dd>");
    var p = n[2] < 0 ? [] : path(n[2]);
    L.forEach(function (lv, k) { h.push(esc(lv) + ": " + (k < p.length ? esc(M[p[k]][0]) : "—") + "<br>"); });
    h.push("</dd>");
    if (n[7].length) h.push("<dt>missing</dt><dd>" + esc(n[7].join(", ")) + "</dd>");
    h.push("<dt>accelerators free/total</dt><dd>" + cap(n[4], n[3]) + " " + esc(D.resources.join(", ")) + "</dd>");
    if (job) {
      h.push("<dt>job pods here</dt><dd>" + n[8] + "</dd>");
      if (n[9]) h.push("<dt>takes no pod</dt><dd>" + esc(n[9]) + "</dd>");
    }
    h.push("<dt>taints</dt><dd>" + (n[6].length ? esc(n[6].join(", ")) : "none") + "</dd>");
    h.push("<dt>labels</dt><dd>" + n[5].map(function (k) { return esc(D.pairs[k]); }).join("<br>") + "</dd></dl>");
    $("info").innerHTML = h.join("");
  }
  function pick(i) {
    document.querySelectorAll(".sel,.hit").forEach(function (e) { e.classList.remove("sel", "hit"); });
    picked = i;
    if (i < 0) return;
    var n = N[i];
    if (focus >= 0 && (n[2] < 0 || path(n[2]).indexOf(focus) < 0)) { focus = -1; draw(); }
    var el = mark(i, "sel");
    if (el) el.scrollIntoView({ block: "center" });
    show(i);
  }
  function search(q) {
    q = q.trim();
    var i = q === "" ? -1 : byName.hasOwnProperty(q) ? byName[q] : -1;
    if (i < 0 && q) for (var k = 0; k < N.length; k++) if (N[k][0].indexOf(q) >= 0) { i = k; break; }
    pick(i);
    $("found").textContent = q === "" ? "" : i < 0 ? "no node matches " + q : "found " + N[i][0];
    if (i >= 0) mark(i, "hit");
  }
  function legend() {
    var h = [];
    D.states.forEach(function (s, k) {
      h.push('<span><i class="sw s' + k + ' f4" data-state="' + s + '"></i>' + s + " " + D.counts[s] + "</span>");
    });
    h.push("<span>fill = free accelerators:</span>");
    ["none", "", "half", "", "all"].forEach(function (t, k) {
      h.push('<span><i class="sw s0 f' + k + '"></i>' + t + "</span>");
    });
    h.push('<span><i class="sw s0 fu"></i>not known</span>');
    if (job) {
      h.push('<span><i class="sw n p">2</i>pods placed</span><span><i class="sw s0 f4 b"></i>takes no pod</span>');
    }
    $("legend").innerHTML = h.join("");
  }
  function jobPanel() {
    if (!job) return;
    var el = $("job"), h = ["<b>" + esc(job.headline) + "</b>"];
    if (job.message) h.push("<br>Kueue: " + esc(job.message));
    job.notes.forEach(function (t) { h.push("<br>" + esc(t)); });
    if (!job.fits) el.className = "nofit";
    el.innerHTML = h.join("");
  }
  function outsideList() {
    if (!outside.length) return;
    var h = ["<h2>Outside the topology: " + outside.length + " node(s) missing level labels (schedulers cannot place on them)</h2><ul>"];
    outside.forEach(function (i) {
      h.push('<li data-n="' + i + '">' + box(i) + " " + esc(N[i][0]) + " — " + D.states[N[i][1]] +
        ", misses " + esc(N[i][7].join(", ")) + "</li>");
    });
    $("outside").innerHTML = h.join("") + "</ul>";
  }

  document.body.addEventListener("mouseover", function (e) {
    var t = e.target.closest("[data-n]");
    if (t && picked < 0) show(+t.dataset.n);
  });
  document.body.addEventListener("click", function (e) {
    var t = e.target.closest("[data-n],.dh,[data-f]");
    if (!t) return;
    if (t.dataset.f !== undefined) { focus = +t.dataset.f; draw(); }
    else if (t.dataset.n !== undefined) pick(picked === +t.dataset.n ? -1 : +t.dataset.n);
    else { focus = +t.dataset.d; draw(); window.scrollTo(0, 0); }
  });
  $("search").addEventListener("input", function (e) { search(e.target.value); });

  var c = D.counts;
  $("summary").textContent = N.length + " node(s) in scope: " + D.states.map(function (s) { return c[s] + " " + s; }).join(", ") +
    " · " + D.origin;
  var hash = decodeURIComponent(location.hash.slice(1));
  hash.split("&").forEach(function (kv) {
    var k = kv.split("=")[0], v = kv.slice(k.length + 1);
    if (k === "focus") M.forEach(function (d, i) {
      if (path(i).map(function (x) { return M[x][0]; }).join("/") === v) focus = i;
    });
  });
  legend(); jobPanel(); outsideList(); draw();
  hash.split("&").forEach(function (kv) { if (kv.indexOf("q=") === 0) { $("search").value = kv.slice(2); search(kv.slice(2)); } });
  document.body.offsetHeight; // force layout so the time below includes it
  document.documentElement.dataset.renderMs = Math.round(performance.now());
  if (D.refresh > 0) setTimeout(function () { location.reload(); }, D.refresh * 1000);
})();
