// The topology map: draws the JSON in #data as nested boxes, or (large maps, or on request)
// as an overview: one row per domain with a bar of used and free accelerators, expanding on
// click down to the node boxes. Plain DOM, no library; the whole map is built as one HTML
// string and set once, which keeps 10,000 nodes fast.
(function () {
  "use strict";
  var OVERVIEW_AT = 1000; // more nodes than this: the page opens on the overview
  var D = JSON.parse(document.getElementById("data").textContent);
  var N = D.nodes, M = D.domains, L = D.levels, job = D.job || null;
  var kids = M.map(function () { return []; }), here = M.map(function () { return []; });
  var roots = [], outside = [], byName = {}, focus = -1, picked = -1;
  var view = N.length > OVERVIEW_AT ? "overview" : "boxes", open = {};
  var bad = M.map(function () { return 0; }), INCONSISTENT = D.states.indexOf("inconsistent");
  M.forEach(function (d, i) { (d[2] < 0 ? roots : kids[d[2]]).push(i); });
  N.forEach(function (n, i) {
    (n[2] < 0 ? outside : here[n[2]]).push(i); byName[n[0]] = i;
    if (n[1] === INCONSISTENT) for (var d = n[2]; d >= 0; d = M[d][2]) bad[d]++;
  });
  // Domains marked by the hot-swap view (one node failure there evicts a Workload), and per
  // domain how many marked ones it holds: an overview row says so before it is opened.
  var marks = D.marks || {}, risky = M.map(function () { return 0; });
  Object.keys(marks).forEach(function (k) { for (var d = +k; d >= 0; d = M[d][2]) risky[d]++; });
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
    var risk = marks[i], tip = risk ? ' title="' + esc(risk) + '"' : "";
    if (risk) c += " risk";
    var h = ['<div class="' + c + '" data-d="' + i + '"' + tip + '><div class="dh" data-d="' + i + '"><b>' +
      esc(L[d[1]] + " " + d[0]) + "</b> " + d[3] + " node(s), " + cap(d[5], d[4]) +
      ' free</div><div class="dc">'];
    kids[i].forEach(function (k) { h.push(domain(k)); });
    if (here[i].length) h.push('<div class="ns">' + here[i].map(box).join("") + "</div>");
    h.push("</div></div>");
    return h.join("");
  }
  // The overview: a row per domain, its bar the share of its accelerators in use.
  function bar(d) {
    if (d[4] <= 0) return '<span class="bar none"></span>';
    if (d[5] < 0) return '<span class="bar fu"></span>';
    var used = (100 * (d[4] - d[5])) / d[4];
    return '<span class="bar"><span class="u" style="width:' + used.toFixed(1) + '%"></span></span>';
  }
  function row(i) {
    var d = M[i], isOpen = !!open[i], note = d[3] + " node(s), " + cap(d[5], d[4]) + " free";
    if (d[6]) note += ", " + d[6] + " partial";
    if (bad[i]) note += ", " + bad[i] + " inconsistent";
    if (risky[i]) note += ', <span class="rk">' + risky[i] + " domain(s) where one failure evicts a job</span>";
    var c = "o", risk = marks[i], tip = risk ? ' title="' + esc(risk) + '"' : "";
    if (job && job.domain === i) c += job.role === "placement" ? " hl" : " best";
    if (risk) c += " risk";
    var h = ['<div class="' + c + '" data-d="' + i + '"' + tip + '><div class="r" data-o="' + i + '"><span class="tw">' +
      (isOpen ? "&#9662;" : "&#9656;") + "</span><b>" + esc(L[d[1]] + " " + d[0]) + "</b>" + bar(d) +
      "<span>" + note + '</span><a data-b="' + i + '">boxes</a></div>'];
    if (isOpen) {
      h.push('<div class="rc">');
      kids[i].forEach(function (k) { h.push(row(k)); });
      if (here[i].length) h.push('<div class="ns">' + here[i].map(box).join("") + "</div>");
      h.push("</div>");
    }
    h.push("</div>");
    return h.join("");
  }
  function outsideRow() {
    if (!outside.length) return "";
    var by = {}, total = 0;
    outside.forEach(function (i) { by[N[i][1]] = (by[N[i][1]] || 0) + 1; total += N[i][3]; });
    var parts = Object.keys(by).map(function (s) { return by[s] + " " + D.states[s]; });
    return '<div class="r out" data-x="1"><span class="tw"></span><b>outside the topology</b>' +
      '<span class="bar none"></span><span>' + outside.length + " node(s): " + parts.join(", ") +
      ", " + total + " accelerator(s) no scheduler sees</span><a data-x=\"1\">list</a></div>";
  }
  function paths(ids) {
    return ids.map(function (i) { return path(i).map(function (d) { return M[d][0]; }).join("/"); });
  }
  function draw() {
    var top = focus < 0 ? roots : [focus];
    if (view === "overview") {
      if (focus >= 0) open[focus] = 1;
      $("map").innerHTML = '<div class="ov">' + (focus < 0 ? outsideRow() : "") + top.map(row).join("") + "</div>";
    } else {
      $("map").innerHTML = top.map(domain).join("");
    }
    var c = ['<a data-f="-1">all domains</a>'];
    if (focus >= 0) path(focus).forEach(function (d) {
      c.push('<a data-f="' + d + '">' + esc(L[M[d][1]] + " " + M[d][0]) + "</a>");
    });
    var hint = view === "overview" ? "click a row to expand it" : "click a domain to zoom in";
    var views = ["overview", "boxes"].map(function (v) {
      return v === view ? "<b>" + v + "</b>" : '<a data-v="' + v + '">' + v + "</a>";
    });
    $("crumbs").innerHTML = c.join(" › ") + (focus >= 0 ? "" : " <small>(" + hint + ")</small>") +
      ' <span class="views">view: ' + views.join(" | ") + "</span>";
    if (picked >= 0) mark(picked, "sel");
    var want = [];
    if (focus >= 0) want.push("focus=" + paths([focus])[0]);
    if (view !== (N.length > OVERVIEW_AT ? "overview" : "boxes")) want.push("view=" + view);
    var opened = Object.keys(open).map(Number).filter(function (i) { return i !== focus; });
    if (view === "overview" && opened.length) want.push("open=" + paths(opened).join(","));
    var hash = want.length ? "#" + want.join("&") : "";
    if (location.hash !== hash) history.replaceState(null, "", hash || location.pathname + location.search);
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
    if (view === "overview" && n[2] >= 0 && !open[n[2]]) {
      path(n[2]).forEach(function (d) { open[d] = 1; });
      draw();
    }
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
    h.push('<span>bar = accelerators:</span><span><span class="bar mini"><span class="u" style="width:100%">' +
      '</span></span>in use</span><span><span class="bar mini"></span>free</span>');
    if (job) {
      h.push('<span><i class="sw n p">2</i>pods placed</span><span><i class="sw s0 f4 b"></i>takes no pod</span>');
    }
    $("legend").innerHTML = h.join("");
  }
  function jobPanel() {
    if (!job) return;
    var el = $("job"), h = ["<b>" + esc(job.headline) + "</b>"];
    if (job.message) h.push("<br>" + esc(job.scheduler) + ": " + esc(job.message));
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
    var t = e.target.closest("[data-n],.dh,[data-f],[data-o],[data-b],[data-v],[data-x]");
    if (!t) return;
    var ds = t.dataset;
    if (ds.f !== undefined) { focus = +ds.f; draw(); }
    else if (ds.n !== undefined) pick(picked === +ds.n ? -1 : +ds.n);
    else if (ds.b !== undefined) { view = "boxes"; focus = +ds.b; draw(); window.scrollTo(0, 0); }
    else if (ds.o !== undefined) { if (open[ds.o]) delete open[ds.o]; else open[ds.o] = 1; draw(); }
    else if (ds.v !== undefined) { view = ds.v; draw(); }
    else if (ds.x !== undefined) $("outside").scrollIntoView();
    else { focus = +ds.d; draw(); window.scrollTo(0, 0); }
  });
  $("search").addEventListener("input", function (e) { search(e.target.value); });

  var c = D.counts;
  $("summary").textContent = N.length + " node(s) in scope: " + D.states.map(function (s) { return c[s] + " " + s; }).join(", ") +
    " · " + D.origin;
  var hash = decodeURIComponent(location.hash.slice(1));
  var byPath = {};
  paths(M.map(function (d, i) { return i; })).forEach(function (p, i) { byPath[p] = i; });
  hash.split("&").forEach(function (kv) {
    var k = kv.split("=")[0], v = kv.slice(k.length + 1);
    if (k === "focus" && byPath.hasOwnProperty(v)) focus = byPath[v];
    if (k === "view" && (v === "overview" || v === "boxes")) view = v;
    if (k === "open") v.split(",").forEach(function (p) { if (byPath.hasOwnProperty(p)) open[byPath[p]] = 1; });
  });
  legend(); jobPanel(); outsideList(); draw();
  hash.split("&").forEach(function (kv) { if (kv.indexOf("q=") === 0) { $("search").value = kv.slice(2); search(kv.slice(2)); } });
  document.body.offsetHeight; // force layout so the time below includes it
  document.documentElement.dataset.renderMs = Math.round(performance.now());
  if (D.refresh > 0) setTimeout(function () { location.reload(); }, D.refresh * 1000);
})();
