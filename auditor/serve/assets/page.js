// The local page: send carnets, follow the audit, show the report.
// Every text comes from the server's labels (#labels); every value from the
// server goes in through textContent or an attribute, never as HTML.
(function () {
  "use strict";
  var L = JSON.parse(document.getElementById("labels").textContent);
  var lang = document.documentElement.lang;
  var reviews = document.body.getAttribute("data-reviews") === "yes";
  var $ = function (id) { return document.getElementById(id); };
  var current = null;     // the run shown
  var carnet = null;      // the carnet shown

  function t(key, params) {
    var text = L["js." + key] || key;
    return text.replace(/\{(\w+)\}/g, function (all, name) {
      return params && Object.prototype.hasOwnProperty.call(params, name) ? String(params[name]) : all;
    });
  }

  function el(tag, text, attrs) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    return node;
  }

  $("lang").addEventListener("change", function () {
    window.location.search = "?lang=" + encodeURIComponent($("lang").value);
  });

  function showError(text) { $("error").textContent = text; $("error").hidden = false; }

  function failed(text) {
    $("progress").hidden = true;
    $("start").hidden = false;
    showError(text);
  }

  function startProgress(text) {
    $("error").hidden = true;
    $("result").hidden = true;
    $("start").hidden = true;
    $("progress").hidden = false;
    $("bar").removeAttribute("value");
    $("progress-text").textContent = text;
  }

  function send(files) {
    if (!files || !files.length) { return; }
    var form = new FormData();
    form.append("lang", lang);
    Array.prototype.forEach.call(files, function (f) {
      form.append("carnet", f, f.webkitRelativePath || f.name);
    });
    startProgress(t("sending"));
    fetch("api/audit", { method: "POST", body: form, credentials: "same-origin" })
      .then(follow, function () { failed(t("network")); });
  }

  function follow(response) {
    return response.json().catch(function () { return {}; }).then(function (body) {
      if (!response.ok) { failed(body.error || String(response.status)); return; }
      poll(body.run);
    });
  }

  function poll(run) {
    fetch("api/runs/" + run, { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (s) {
        progress(s);
        if (s.state === "done") { show(s); }
        else if (s.state === "failed") { failed(t("failed", { message: s.message })); }
        else { window.setTimeout(function () { poll(run); }, 250); }
      }, function () { failed(t("network")); });
  }

  function progress(s) {
    if (s.total) {
      $("bar").max = s.total;
      $("bar").value = s.done;
      $("progress-text").textContent = t("progress", { done: s.done, total: s.total });
    } else {
      $("progress-text").textContent = t("queued");
    }
  }

  function verdictText(v) { return L["js.verdict_" + v] || v; }

  function show(s) {
    current = s;
    $("progress").hidden = true;
    $("result").hidden = false;
    $("ignored").hidden = !s.ignored.length;
    $("ignored").textContent = s.ignored.length ? t("ignored", { names: s.ignored.join(", ") }) : "";
    $("carnets").hidden = !s.batch;
    $("show-index").hidden = !s.batch;
    if (s.batch) {
      carnetTable(s);
      showIndex();
    } else {
      select(s.carnets[0]);
    }
  }

  function carnetTable(s) {
    var head = $("carnets").tHead, body = $("carnets").tBodies[0];
    head.textContent = ""; body.textContent = "";
    var tr = el("tr");
    ["carnet", "verdict", "errors", "warnings", ""].forEach(function (k) { tr.appendChild(el("th", k ? t(k) : "", { scope: "col" })); });
    head.appendChild(tr);
    s.carnets.forEach(function (c) {
      var row = el("tr", null, { "class": c.verdict, "data-id": c.id });
      row.appendChild(el("td", c.shown));
      row.appendChild(el("td", verdictText(c.verdict), { "class": "sev " + c.verdict }));
      row.appendChild(el("td", c.summary.errors, { "class": "num" }));
      row.appendChild(el("td", c.summary.warnings, { "class": "num" }));
      var cell = el("td"), button = el("button", t("open"), { type: "button", "class": "open-carnet" });
      button.addEventListener("click", function () { select(c); });
      cell.appendChild(button);
      row.appendChild(cell);
      body.appendChild(row);
    });
  }

  function showIndex() {
    carnet = null;
    $("report").src = current.index;
    $("verdict").textContent = "";
    $("verdict").className = "verdict";
    ["dl-json", "dl-xlsx"].forEach(function (id) { $(id).hidden = true; });
    $("open-report").href = current.index;
    $("findings-panel").hidden = true;
  }

  function select(c) {
    carnet = c;
    $("report").src = c.report;
    $("verdict").textContent = c.shown + " — " + verdictText(c.verdict);
    $("verdict").className = "verdict " + c.verdict;
    $("dl-json").href = c.findings + "?download=1";
    $("dl-xlsx").href = c.workbook + "?download=1";
    $("dl-json").hidden = false;
    $("dl-xlsx").hidden = false;
    $("open-report").href = c.report;
    var known = reviews ? fetch("api/reviews", { credentials: "same-origin" }).then(function (r) { return r.json(); })
                        : Promise.resolve({ latest: {} });
    Promise.all([fetch(c.findings, { credentials: "same-origin" }).then(function (r) { return r.json(); }), known])
      .then(function (both) { findings(c, both[0], both[1].latest || {}); });
  }

  function cellHref(c, f) {
    var q = new URLSearchParams({ table: f.table || "", row: f.row === null ? "" : String(f.row),
                                  column: f.column || "", cell: f.cell || "" });
    return "runs/" + current.run + "/" + c.id + "/cell?" + q.toString();
  }

  function findings(c, doc, decided) {
    var head = $("findings").tHead, body = $("findings").tBodies[0];
    head.textContent = ""; body.textContent = "";
    $("findings-panel").hidden = false;
    var cols = ["code", "severity", "seance", "coup", "message", "where"];
    if (reviews) { cols.push("review"); }
    var tr = el("tr");
    cols.forEach(function (k) { tr.appendChild(el("th", t(k), { scope: "col" })); });
    head.appendChild(tr);
    if (!doc.findings.length) {
      var none = el("tr"), td = el("td", t("no_findings"), { colspan: String(cols.length) });
      none.appendChild(td); body.appendChild(none);
      return;
    }
    doc.findings.forEach(function (f, i) {
      var row = el("tr", null, { "data-severity": f.severity, "data-code": f.code, "data-index": String(i) });
      row.appendChild(el("td", f.code));
      row.appendChild(el("td", t(f.severity), { "class": "sev " + f.severity }));
      row.appendChild(el("td", f.seance, { "class": "num" }));
      row.appendChild(el("td", f.coup, { "class": "num" }));
      row.appendChild(el("td", f.message));
      var where = el("td");
      if (f.table && f.row !== null) {
        where.appendChild(el("a", (f.cell || f.column || "") + " (" + f.table + ", " + f.row + ")",
                             { href: cellHref(c, f), target: "_blank", rel: "noopener", "class": "cell-link" }));
      }
      row.appendChild(where);
      if (reviews) { row.appendChild(reviewCell(c, f, i, decided[f.fingerprint])); }
      body.appendChild(row);
    });
  }

  function reviewCell(c, f, i, last) {
    var td = el("td", null, { "class": "review" });
    var statuses = JSON.parse(L["js.review_statuses"] || "[]");
    var select = el("select", null, { "class": "review-status", "aria-label": t("review") });
    statuses.forEach(function (s) { select.appendChild(el("option", s[1], { value: s[0] })); });
    last = last || f.review;
    if (last && last.status) { select.value = last.status; }
    var text = el("input", null, { type: "text", "class": "review-text", "aria-label": t("justification"),
                                   placeholder: t("justification") });
    if (last && last.justification) { text.value = last.justification; }
    var save = el("button", t("save"), { type: "button", "class": "review-save" });
    var done = el("span", "", { "class": "review-done", role: "status" });
    save.addEventListener("click", function () {
      done.textContent = "";
      fetch("api/runs/" + current.run + "/" + c.id + "/review", {
        method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ index: i, status: select.value, justification: text.value, by: $("review-by").value })
      }).then(function (r) { return r.json().then(function (b) { return [r.ok, b]; }); })
        .then(function (res) { done.textContent = res[0] ? t("saved") : (res[1].error || "?"); },
              function () { done.textContent = t("network"); });
    });
    td.appendChild(select); td.appendChild(text); td.appendChild(save); td.appendChild(done);
    return td;
  }

  // The report is sandboxed (an origin of its own): it is printed in a tab of its own.
  $("print").addEventListener("click", function () { window.open($("report").src, "_blank", "noopener"); });
  $("show-index").addEventListener("click", showIndex);
  $("again").addEventListener("click", function () {
    $("result").hidden = true; $("start").hidden = false; $("report").src = "about:blank";
    $("files").value = ""; $("csv-folder").value = "";
  });
  $("files").addEventListener("change", function () { send($("files").files); });
  $("csv-folder").addEventListener("change", function () { send($("csv-folder").files); });
  var drop = $("drop");
  ["dragenter", "dragover"].forEach(function (name) {
    drop.addEventListener(name, function (e) { e.preventDefault(); drop.classList.add("over"); });
  });
  ["dragleave", "drop"].forEach(function (name) {
    drop.addEventListener(name, function () { drop.classList.remove("over"); });
  });
  drop.addEventListener("drop", function (e) { e.preventDefault(); send(e.dataTransfer.files); });
  $("folder-form").addEventListener("submit", function (e) {
    e.preventDefault();
    startProgress(t("queued"));
    fetch("api/folder", { method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
                          body: JSON.stringify({ folder: $("folder").value, lang: lang }) })
      .then(follow, function () { failed(t("network")); });
  });
}());
