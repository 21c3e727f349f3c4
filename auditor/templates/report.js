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
    var heads = table.tHead.rows;
    each(heads[heads.length - 1].cells, function (th, col) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      button.title = T.sort;
      // Print shows this plain copy: a button in a repeated table header prints as a blank band.
      var plain = document.createElement("span");
      plain.className = "th-print";
      plain.setAttribute("aria-hidden", "true");
      plain.textContent = th.textContent;
      while (th.firstChild) { button.appendChild(th.firstChild); }
      th.appendChild(button);
      th.appendChild(plain);
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

    var limit = form.getAttribute("data-limit");
    var where = form.getAttribute("data-where");
    // Exact counts come from every finding of a group (data-count, data-seances),
    // not only from the rows the page holds: a filter says what it covers.
    var apply = function () {
      var sev = {};
      var allSev = true;
      each(boxes, function (b) { sev[b.value] = b.checked; allSev = allSev && b.checked; });
      var q = fold(search.value.trim());
      var narrowed = rule.value !== "" || seance.value !== "" || q !== "";
      var shown = 0, matching = 0, rowsInPage = 0, searchMissed = false;
      each(groups, function (g) {
        var rows = g.querySelectorAll("tbody tr");
        var groupOk = sev[g.getAttribute("data-severity")] && (rule.value === "" || rule.value === g.getAttribute("data-code"));
        var truncated = g.getAttribute("data-truncated") === "yes";
        var n = 0;
        each(rows, function (r) {
          var ok = groupOk && (seance.value === "" || r.getAttribute("data-seance") === seance.value) &&
            (q === "" || fold(r.textContent).indexOf(q) >= 0);
          r.hidden = !ok;
          if (ok) { n += 1; }
        });
        var m = 0;
        if (groupOk) {
          m = seance.value === "" ? Number(g.getAttribute("data-count")) :
            (JSON.parse(g.getAttribute("data-seances"))[seance.value] || 0);
          if (q !== "") {
            // Text search can only read the rows present; a truncated group may hold more.
            if (truncated && m > rows.length) { searchMissed = true; }
            m = n;
          }
        }
        rowsInPage += rows.length;
        shown += n;
        matching += m;
        g.hidden = !groupOk || (m === 0 && !(q !== "" && truncated));
        var label = "";
        if ((narrowed || !allSev) && !g.hidden) {
          label = m > n ? fmt(T.shown_of, { n: n, m: m }) : fmt(T.shown_in_group, { n: n });
        }
        g.querySelector("summary .shown").textContent = label;
        if (narrowed && n > 0) { g.open = true; }
      });
      var text = fmt(T.filter_exact, { shown: shown, total: matching });
      if (matching > shown) { text += " " + fmt(T.filter_left, { left: matching - shown, limit: limit, where: where }); }
      if (searchMissed) { text += " " + fmt(T.filter_search, { rows: rowsInPage, where: where }); }
      status.textContent = text;
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

  // -- index.html: filter the carnets by verdict, casino, table, period, text ---
  var index = document.getElementById("index-filters");
  if (index) {
    var carnets = document.querySelectorAll("#carnets tbody tr");
    var pick = function (id) { return document.getElementById(id); };
    var fields = ["filter-verdict", "filter-casino", "filter-table", "filter-from", "filter-to", "filter-carnet"];
    var applyIndex = function () {
      var v = pick("filter-verdict").value, c = pick("filter-casino").value, t = pick("filter-table").value;
      var from = pick("filter-from").value, to = pick("filter-to").value;
      var q = fold(pick("filter-carnet").value.trim());
      var shown = 0;
      each(carnets, function (r) {
        var first = r.getAttribute("data-first"), last = r.getAttribute("data-last");
        // A carnet is in the period when its séances overlap it (ISO dates compare as text).
        var ok = (v === "" || r.getAttribute("data-verdict") === v) &&
          (c === "" || r.getAttribute("data-casino") === c) &&
          (t === "" || r.getAttribute("data-table") === t) &&
          (from === "" || (last !== "" && last >= from)) && (to === "" || (first !== "" && first <= to)) &&
          (q === "" || fold(r.textContent).indexOf(q) >= 0);
        r.hidden = !ok;
        if (ok) { shown += 1; }
      });
      pick("index-status").textContent = fmt(T.index_status, { shown: shown, total: carnets.length });
    };
    index.hidden = false;
    index.addEventListener("submit", function (e) { e.preventDefault(); });
    fields.forEach(function (id) {
      pick(id).addEventListener(id === "filter-carnet" ? "input" : "change", applyIndex);
    });
    pick("index-reset").addEventListener("click", function () {
      fields.forEach(function (id) { pick(id).value = ""; });
      applyIndex();
    });
    applyIndex();
  }


  // -- reviews, when the local page frames the report ---------------------------
  // The page (never another site: the server's frame-ancestors) sends the
  // review statuses and words; each finding of this list then gets its
  // decision and a comment box, and a decision goes back to the page, which
  // records it. Opened alone (a USB stick), none of this appears.
  if (window.parent !== window) {
    window.addEventListener("message", function (e) {
      var d = e.data;
      if (e.source !== window.parent || !d || typeof d !== "object") { return; }
      if (d.type === "ecarte-review-setup") { reviewControls(d); }
      if (d.type === "ecarte-review-result") { reviewResult(d); }
    });
    window.parent.postMessage({ type: "ecarte-report-ready" }, "*");
  }
  function reviewControls(d) {
    each(document.querySelectorAll("tr[data-fingerprint]"), function (row) {
      if (row.querySelector(".review-box") || !row.closest("#findings, #cross")) { return; }
      var fp = row.getAttribute("data-fingerprint"), last = (d.decided || {})[fp] || {};
      var box = document.createElement("td");
      box.className = "review-box";
      var select = document.createElement("select");
      select.className = "review-status";
      select.setAttribute("aria-label", d.words.status);
      d.statuses.forEach(function (s) {
        var o = document.createElement("option");
        o.value = s[0]; o.textContent = s[1];
        select.appendChild(o);
      });
      if (last.status) { select.value = last.status; }
      var text = document.createElement("textarea");
      text.className = "review-text";
      text.rows = 2;
      text.setAttribute("aria-label", d.words.comment);
      text.placeholder = d.words.comment;
      text.value = last.justification || "";
      var save = document.createElement("button");
      save.type = "button"; save.className = "review-save"; save.textContent = d.words.save;
      var done = document.createElement("span");
      done.className = "review-done"; done.setAttribute("role", "status");
      save.addEventListener("click", function () {
        done.textContent = d.words.saving;
        window.parent.postMessage({ type: "ecarte-review", fingerprint: fp, status: select.value,
                                    justification: text.value }, "*");
      });
      box.appendChild(select); box.appendChild(text); box.appendChild(save); box.appendChild(done);
      var cell = (d.cells || {})[fp];
      if (cell && /^http:\/\/(127\.0\.0\.1|localhost)[:/]/.test(cell.href)) {
        var link = document.createElement("a");
        link.className = "cell-link"; link.href = cell.href; link.target = "_blank"; link.rel = "noopener";
        link.textContent = cell.text;
        box.appendChild(document.createElement("br"));
        box.appendChild(link);
      }
      row.appendChild(box);
    });
    each(document.querySelectorAll("#findings table.findings thead tr:last-child, #cross thead tr"), function (tr) {
      if (tr.querySelector(".review-head")) { return; }
      var th = document.createElement("th");
      th.scope = "col"; th.className = "review-head"; th.textContent = d.words.review;
      tr.appendChild(th);
    });
    each(document.querySelectorAll("#findings tr.print-head th"), function (th) {
      th.colSpan = th.colSpan + 1;
    });
  }
  function reviewResult(d) {
    each(document.querySelectorAll("tr[data-fingerprint]"), function (row) {
      if (row.getAttribute("data-fingerprint") !== d.fingerprint) { return; }
      var done = row.querySelector(".review-done");
      if (done) { done.textContent = d.text; }
    });
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
