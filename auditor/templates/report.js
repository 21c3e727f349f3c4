// Sorting, filtering and print preparation for report.html and index.html.
// Plain ES5-level DOM code, inlined: the report must work offline, anywhere.
(function () {
  "use strict";
  var T = JSON.parse(document.getElementById("i18n-data").textContent);

  function fmt(text, params) {
    return text.replace(/\{(\w+)\}/g, function (m, k) { return k in params ? params[k] : m; });
  }
  function each(list, fn) { Array.prototype.forEach.call(list, fn); }
  // Accent- and case-insensitive search: "seance" finds "Séance".
  function fold(text) {
    return text.normalize("NFD").replace(/[\u0300-\u036f]/g, "").toLowerCase();
  }

  // -- sortable tables -------------------------------------------------------
  function sortKey(row, col) {
    var cell = row.cells[col];
    if (!cell) { return ""; }
    var v = cell.getAttribute("data-v");
    return v !== null ? v : cell.textContent.trim();
  }
  function compare(a, b) {
    var na = Number(a), nb = Number(b);
    if (a !== "" && b !== "" && !isNaN(na) && !isNaN(nb)) { return na - nb; }
    if (a === "" || b === "") { return a === b ? 0 : (a === "" ? -1 : 1); }
    return a.localeCompare(b, undefined, { numeric: true });
  }
  function sortBy(table, col, button) {
    var body = table.tBodies[0];
    var dir = button.getAttribute("data-dir") === "asc" ? "desc" : "asc";
    each(table.querySelectorAll("thead button.sort"), function (b) {
      b.removeAttribute("data-dir");
      b.parentNode.removeAttribute("aria-sort");
    });
    button.setAttribute("data-dir", dir);
    button.parentNode.setAttribute("aria-sort", dir === "asc" ? "ascending" : "descending");
    var rows = Array.prototype.slice.call(body.rows);
    var keys = rows.map(function (r, i) { return { row: r, key: sortKey(r, col), i: i }; });
    keys.sort(function (x, y) {
      var c = compare(x.key, y.key);
      return (dir === "asc" ? c : -c) || x.i - y.i;
    });
    var frag = document.createDocumentFragment();
    keys.forEach(function (k) { frag.appendChild(k.row); });
    body.appendChild(frag);
  }
  each(document.querySelectorAll("table.sortable"), function (table) {
    each(table.tHead.rows[0].cells, function (th, col) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      button.title = T.sort;
      while (th.firstChild) { button.appendChild(th.firstChild); }
      th.appendChild(button);
      button.addEventListener("click", function () { sortBy(table, col, button); });
    });
  });

  // -- findings filters ---------------------------------------------------------
  var form = document.getElementById("filters");
  if (form) {
    var groups = document.querySelectorAll("#findings details.group");
    var rule = document.getElementById("filter-rule");
    var seance = document.getElementById("filter-seance");
    var search = document.getElementById("filter-search");
    var status = document.getElementById("filter-status");
    var boxes = form.querySelectorAll("input[name=severity]");

    var apply = function () {
      var sev = {};
      var allSev = true;
      each(boxes, function (b) { sev[b.value] = b.checked; allSev = allSev && b.checked; });
      var q = fold(search.value.trim());
      var narrowed = rule.value !== "" || seance.value !== "" || q !== "";
      var shown = 0, total = 0;
      each(groups, function (g) {
        var rows = g.querySelectorAll("tbody tr");
        var groupOk = sev[g.getAttribute("data-severity")] && (rule.value === "" || rule.value === g.getAttribute("data-code"));
        var n = 0;
        each(rows, function (r) {
          var ok = groupOk && (seance.value === "" || r.getAttribute("data-seance") === seance.value) &&
            (q === "" || fold(r.textContent).indexOf(q) >= 0);
          r.hidden = !ok;
          if (ok) { n += 1; }
        });
        total += rows.length;
        shown += n;
        // A truncated group may hold matches among the rows left out: keep it
        // visible (its note points to findings.json) rather than hide it.
        g.hidden = !groupOk || (n === 0 && g.getAttribute("data-truncated") !== "yes");
        g.querySelector("summary .shown").textContent = (narrowed || !allSev) && !g.hidden ? fmt(T.shown_in_group, { n: n }) : "";
        if (narrowed && n > 0) { g.open = true; }
      });
      status.textContent = fmt(T.filter_status, { shown: shown, total: total });
    };
    form.hidden = false;
    form.addEventListener("submit", function (e) { e.preventDefault(); });
    each(boxes, function (b) { b.addEventListener("change", apply); });
    rule.addEventListener("change", apply);
    seance.addEventListener("change", apply);
    search.addEventListener("input", apply);
    document.getElementById("filter-reset").addEventListener("click", function () {
      each(boxes, function (b) { b.checked = true; });
      rule.value = "";
      seance.value = "";
      search.value = "";
      apply();
    });
    document.getElementById("expand-all").addEventListener("click", function () {
      each(groups, function (g) { g.open = true; });
    });
    document.getElementById("collapse-all").addEventListener("click", function () {
      each(groups, function (g) { g.open = false; });
    });
    // The séance table's buttons narrow the findings to that séance.
    each(document.querySelectorAll("button.show-seance"), function (b) {
      b.disabled = false;
      b.addEventListener("click", function () {
        seance.value = b.getAttribute("data-seance");
        apply();
        document.getElementById("findings").scrollIntoView();
      });
    });
    apply();
  }

  // -- print: every group open, then back as the reader left them ---------------
  window.addEventListener("beforeprint", function () {
    each(document.querySelectorAll("details:not([open])"), function (d) {
      d.setAttribute("data-print-opened", "");
      d.open = true;
    });
  });
  window.addEventListener("afterprint", function () {
    each(document.querySelectorAll("details[data-print-opened]"), function (d) {
      d.removeAttribute("data-print-opened");
      d.open = false;
    });
  });
})();
