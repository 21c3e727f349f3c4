// The local page: send carnets, follow the audit, show the report, record
// decisions, list the visit's audits. Every text comes from the server's
// labels (#labels); every value from the server goes in through setText
// (textContent, its bidirectional controls as code points) or an attribute,
// never as HTML. What is shown lives in the address (?audit=…&carnet=…): a
// reload or the language menu shows it again.
(function () {
  "use strict";
  var L = JSON.parse(document.getElementById("labels").textContent);
  var lang = document.documentElement.lang;
  var reviews = document.body.getAttribute("data-reviews") === "yes";
  var $ = function (id) { return document.getElementById(id); };
  var current = null;     // the run shown (its status)
  var carnet = null;      // the carnet shown
  var settings = {};

  function t(key, params) {
    var text = L["js." + key] || key;
    return text.replace(/\{(\w+)\}/g, function (all, name) {
      return params && Object.prototype.hasOwnProperty.call(params, name) ? String(params[name]) : all;
    });
  }

  // The characters that reorder on screen the text around them (Unicode's
  // Bidi_Control): a file named "carnet\u202Excl.csv" would show reversed. Every
  // text goes in with each of them written as its code point, as the reports
  // write them (auditor/report/html_report.py, `shown`).
  var BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  function plain(text) {
    return String(text).replace(BIDI, function (c) {
      return "<U+" + ("000" + c.charCodeAt(0).toString(16).toUpperCase()).slice(-4) + ">";
    });
  }

  function setText(node, text) { node.textContent = plain(text); }

  function el(tag, text, attrs) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { setText(node, text); }
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    return node;
  }

  function getJSON(url) {
    return fetch(url, { credentials: "same-origin", cache: "no-store" }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (b) { return [r.ok, b, r.status]; });
    });
  }

  function postJSON(url, body) {
    return fetch(url, { method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
                        body: JSON.stringify(body) })
      .then(function (r) { return r.json().catch(function () { return {}; }).then(function (b) { return [r.ok, b]; }); });
  }

  // -- the address: what is shown ------------------------------------------------
  function remember() {
    var q = new URLSearchParams(window.location.search);
    q.delete("token");
    if (current) { q.set("audit", current.run); } else { q.delete("audit"); }
    if (carnet) { q.set("carnet", carnet.id); } else { q.delete("carnet"); }
    var text = q.toString();
    window.history.replaceState(null, "", text ? "?" + text : window.location.pathname);
  }

  $("lang").addEventListener("change", function () {
    var q = new URLSearchParams(window.location.search);
    q.set("lang", $("lang").value);
    window.location.search = "?" + q.toString();
  });

  function showError(text) { setText($("error"), text); $("error").hidden = false; }

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
    setText($("progress-text"), text);
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
      poll(body.run, null);
    });
  }

  function poll(run, wanted) {
    getJSON("api/runs/" + run).then(function (res) {
      var s = res[1];
      if (res[2] === 404) {   // an address naming an audit no longer kept: the start, as if none
        current = null; carnet = null; remember();
        $("progress").hidden = true; $("start").hidden = false;
        return;
      }
      if (!res[0]) { failed(t("network")); return; }
      progress(s);
      if (s.state === "done") { show(s, wanted); listVisits(); }
      else if (s.state === "failed") { failed(s.message ? t("failed", { message: s.message }) : t("network")); }
      else { window.setTimeout(function () { poll(run, wanted); }, 250); }
    }, function () { failed(t("network")); });
  }

  function progress(s) {
    if (s.total) {
      $("bar").max = s.total;
      $("bar").value = s.done;
      setText($("progress-text"), t("progress", { done: s.done, total: s.total }));
    } else {
      setText($("progress-text"), t("queued"));
    }
  }

  function verdictText(v) { return L["js.verdict_" + v] || v; }

  function show(s, wanted) {
    current = s;
    $("settings").open = false;
    $("start").hidden = true;
    $("progress").hidden = true;
    $("result").hidden = false;
    $("ignored").hidden = !s.ignored.length;
    setText($("ignored"), s.ignored.length ? t("ignored", { names: s.ignored.join(", "), expected: L["js.expected"] }) : "");
    setText($("place"), s.place ? t("kept_in", { place: s.place }) + (s.created_text ? " — " + s.created_text : "") : "");
    $("carnets").hidden = !s.batch;
    $("show-index").hidden = !s.batch;
    if (s.batch) { carnetTable(s); }
    var chosen = s.carnets.filter(function (c) { return c.id === wanted; })[0];
    if (chosen) { select(chosen); }
    else if (s.batch) { showIndex(); }
    else { select(s.carnets[0]); }
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

  function fresh(url) { return url + (url.indexOf("?") < 0 ? "?" : "&") + "v=" + current.version; }

  function showIndex() {
    carnet = null;
    remember();
    $("report").src = fresh(current.index);
    $("verdict").textContent = "";
    $("verdict").className = "verdict";
    ["dl-json", "dl-xlsx", "open-pv"].forEach(function (id) { $(id).hidden = true; });
    $("changes").hidden = true;
    $("open-report").href = current.index;
  }

  function select(c) {
    carnet = c;
    remember();
    $("report").src = fresh(c.report);
    setText($("verdict"), c.shown + " — " + verdictText(c.verdict));
    $("verdict").className = "verdict " + c.verdict;
    $("dl-json").href = c.findings + "?download=1";
    $("dl-xlsx").href = c.workbook + "?download=1";
    $("dl-json").hidden = false;
    $("dl-xlsx").hidden = false;
    $("open-pv").hidden = !c.pv;
    if (c.pv) { $("open-pv").href = fresh(c.pv); }
    $("open-report").href = c.report;
    changes(c);
  }

  function changes(c) {
    var box = $("changes");
    box.textContent = "";
    if (c.previous && c.baseline_counts) {
      box.appendChild(el("strong", t("previous", { when: c.previous.created_text })));
      box.appendChild(document.createTextNode(" " + t("changes", c.baseline_counts)));
    } else if (c.casino) {
      setText(box, t("no_previous"));
    }
    box.hidden = !box.textContent;
  }

  function cellHref(run, c, f) {
    var q = new URLSearchParams({ table: f.table || "", row: f.row === null ? "" : String(f.row),
                                  column: f.column || "", cell: f.cell || "" });
    return "runs/" + run.run + "/" + c.id + "/cell?" + q.toString();
  }

  // -- printing: the procès-verbal (or the full report), never this page ----------
  function print() {
    if (carnet && carnet.pv) {
      window.open(fresh(carnet.pv), "_blank", "noopener");
    } else if (current) {
      window.open(carnet ? carnet.report : current.index, "_blank", "noopener");
    }
  }
  $("print").addEventListener("click", print);
  document.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && (e.key === "p" || e.key === "P") && current && !$("result").hidden) {
      e.preventDefault();
      print();
    }
  });

  // -- decisions, from the report's own list of findings ---------------------------
  var statuses = JSON.parse(L["js.review_statuses"] || "[]");
  window.addEventListener("message", function (e) {
    var frame = $("report");
    if (!reviews || e.source !== frame.contentWindow || !carnet || !e.data || typeof e.data !== "object") { return; }
    if (e.data.type === "ecarte-report-ready") {
      var run = current, shown = carnet;   // as they are now: the answer may come after another choice
      getJSON(fresh(shown.findings)).then(function (res) {
        if (run !== current || shown !== carnet || !frame.contentWindow) { return; }
        var decided = {}, cells = {};
        (res[1].findings || []).forEach(function (f) {
          if (f && f.review) { decided[f.fingerprint] = f.review; }
          if (f && f.table && f.row !== null && f.row !== undefined) {
            cells[f.fingerprint] = { href: new URL(cellHref(run, shown, f), window.location.href).href,
                                     text: (f.cell || f.column || "") + " (" + f.table + ", " + f.row + ")" };
          }
        });
        frame.contentWindow.postMessage({ type: "ecarte-review-setup", statuses: statuses, decided: decided, cells: cells,
          words: { status: t("status"), comment: t("comment"), save: t("save"), saving: t("saving"),
                   review: t("review") } }, "*");
      });
    } else if (e.data.type === "ecarte-review") {
      record(frame, e.data);
    }
  });

  function record(frame, d) {
    var shown = carnet, run = current;
    var answer = function (text) {
      frame.contentWindow.postMessage({ type: "ecarte-review-result", fingerprint: d.fingerprint, text: text }, "*");
    };
    postJSON("api/runs/" + run.run + "/" + shown.id + "/review",
             { fingerprint: String(d.fingerprint), status: String(d.status), justification: String(d.justification),
               by: $("review-by").value })
      .then(function (res) {
        if (!res[0]) { answer(res[1].error || "?"); return; }
        answer(t("saved"));
        setText($("review-state"), t("rerendering"));
        remade(run.run, run.version, shown.id);
      }, function () { answer(t("network")); });
  }

  function remade(run, version, cid) {
    getJSON("api/runs/" + run).then(function (res) {
      var s = res[1];
      if (res[0] && s.version > version && !s.rendering) {
        setText($("review-state"), t("saved"));
        if (current && current.run === run) { show(s, carnet ? carnet.id : cid); }   // unless another was chosen since
        listVisits();
      } else {
        window.setTimeout(function () { remade(run, version, cid); }, 300);
      }
    });
  }

  // -- the visit's audits ---------------------------------------------------------
  function listVisits() {
    getJSON("api/audits").then(function (res) {
      var box = $("visits-list");
      if (!res[0]) { setText(box, res[1].error || ""); return; }
      if (!res[1].visits.length) { return; }
      box.textContent = "";
      var past = false;
      res[1].visits.forEach(function (v) {
        if (!v.today && !past) { box.appendChild(el("h3", t("past_visits"))); past = true; }
        var section = el("section", null, { "class": "visit" + (v.today ? " today" : ""), "data-day": v.day });
        section.appendChild(el("h4", v.today ? t("today") + " — " + v.day_text : v.day_text));
        var list = el("ul");
        v.audits.forEach(function (a) {
          var item = el("li", null, { "data-audit": a.id });
          var link = el("a", t("audit_of", { when: a.when, place: a.place }), { href: "?audit=" + a.id, "class": "audit-link" });
          item.appendChild(link);
          var names = a.carnets.map(function (c) { return c.shown + " (" + verdictText(c.verdict) + ")"; }).join(", ");
          item.appendChild(el("span", " — " + names, { "class": "note" }));
          list.appendChild(item);
        });
        section.appendChild(list);
        box.appendChild(section);
      });
    });
  }

  // -- settings -------------------------------------------------------------------
  function fillSettings(s) {
    settings = s;
    $("set-inspector").value = s.inspector || "";
    $("set-grade").value = s.grade || "";
    $("set-place").value = s.place || "";
    $("set-workspace").value = s.workspace || "";
    $("set-certificate").value = s.certificate || "";
    $("settings").open = !s.filled && !current;   // asked on the start screen; out of the report's way
    // Who decides: the inspector of the settings, unless typed here.
    if (reviews && s.inspector && $("review-by").getAttribute("data-typed") !== "yes") { $("review-by").value = s.inspector; }
  }
  if (reviews) { $("review-by").addEventListener("input", function () { $("review-by").setAttribute("data-typed", "yes"); }); }
  $("settings-form").addEventListener("submit", function (e) {
    e.preventDefault();
    setText($("settings-done"), t("saving"));
    postJSON("api/settings", { inspector: $("set-inspector").value, grade: $("set-grade").value,
                               place: $("set-place").value, workspace: $("set-workspace").value,
                               certificate: $("set-certificate").value, password: $("set-password").value || null })
      .then(function (res) {
        $("set-password").value = "";
        if (!res[0]) { setText($("settings-done"), res[1].error || "?"); return; }
        fillSettings(res[1]);
        $("settings").open = true;
        setText($("settings-done"), t("settings_saved") + " " + (res[1].signing ? t("signed") : t("unsigned")));
        listVisits();
      }, function () { setText($("settings-done"), t("network")); });
  });

  $("show-index").addEventListener("click", showIndex);
  $("again").addEventListener("click", function () {
    current = null; carnet = null; remember();
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

  // -- at load: the settings, the visits, and what the address names ----------------
  getJSON("api/settings").then(function (res) { if (res[0]) { fillSettings(res[1]); } });
  listVisits();
  var q = new URLSearchParams(window.location.search);
  if (/^[0-9a-f]{16}$/.test(q.get("audit") || "")) {
    startProgress(t("queued"));
    poll(q.get("audit"), q.get("carnet"));
  }
}());
