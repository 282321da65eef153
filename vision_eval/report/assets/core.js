/* vision-eval report, part 1 (data, DOM helpers, formatting): concatenated by page.py inside one function scope (no globals). */

  var DATA = JSON.parse(document.getElementById("report-data").textContent);
  var SAMPLES = DATA.samples || [];
  // Several variants (run groups; shards of one run are one group): one card per sample, every variant's verdict side by side.
  var LABELS = DATA.labels || [];
  var COMPARE = LABELS.filter(function (l) { return l; }).length > 1;
  var DEFAULTS = { evaluator: "", run: "", status: "", outcome: "", changed: "", min: "", max: "", q: "", sort: "problems", size: "50", page: "1" };
  var state = Object.assign({}, DEFAULTS);
  var STATUS = {
    passed: { icon: "\u2713", text: "passed" },
    failed: { icon: "\u2717", text: "failed" },
    processed: { icon: "\u2022", text: "processed" },
    error: { icon: "\u26a0", text: "error" },
    skipped: { icon: "\u2298", text: "skipped" }
  };
  var REASONING_KEYS = ["reasoning", "reason", "explanation", "rationale", "feedback", "critique"];
  var LIST_KEYS = ["hallucinations", "missing_elements", "whatWorked", "issues"];
  var TOP_ISSUE_KEYS = ["TOP_ISSUE", "topIssue", "top_issue"];

  /* ---------- DOM helpers: every piece of data goes through textContent or setAttribute ---------- */
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }
  function svg(tag, attrs, children) {
    var node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }
  function setAttrs(node, attrs) {
    Object.keys(attrs || {}).forEach(function (key) {
      var value = attrs[key];
      if (value === null || value === undefined || value === false) return;
      if (key === "text") node.textContent = String(value);
      else if (key === "class") node.setAttribute("class", value);
      else node.setAttribute(key, value === true ? "" : String(value));
    });
  }
  function append(node, children) {
    (children || []).forEach(function (child) {
      if (child === null || child === undefined || child === false) return;
      node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
    });
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  /* ---------- formatting ---------- */
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }
  function isNum(v) { return typeof v === "number" && isFinite(v); }
  function fmt(v, digits) { return isNum(v) ? v.toFixed(digits === undefined ? 3 : digits) : "\u2013"; }
  function pct(v) { return isNum(v) ? (v * 100).toFixed(1) + "%" : "\u2013"; }
  function cost(v) { return isNum(v) ? "$" + v.toFixed(4) : "\u2013"; }
  function int(v) { return isNum(v) ? v.toLocaleString("en-US") : "\u2013"; }
  function cell(v) {
    if (v === null || v === undefined) return "\u2013";
    if (typeof v === "number") return Number.isInteger(v) ? int(v) : fmt(v, 4);
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  }
  /* What went wrong first: error, then failed, then a score without a threshold, passed, skipped. */
  var SEVERITY = { error: 0, failed: 1, processed: 2, passed: 3, skipped: 4 };
  function severity(r) { var k = outcome(r); return k in SEVERITY ? SEVERITY[k] : 5; }
  function outcome(r) {
    if (r.status === "processed") return r.passed === true ? "passed" : r.passed === false ? "failed" : "processed";
    return r.status === "error" ? "error" : r.status === "skipped" ? "skipped" : null;
  }
  function badge(kind, label) {
    var s = STATUS[kind] || { icon: "?", text: String(kind) };
    return el("span", { class: "badge st-" + (STATUS[kind] ? kind : "other") }, [
      el("span", { "aria-hidden": "true", text: s.icon + " " }), label || s.text
    ]);
  }
  function bar(score, label) {
    var width = isNum(score) ? Math.max(0, Math.min(1, score)) * 100 : 0;
    var fill = el("span", { class: "fill" });
    fill.style.width = width.toFixed(1) + "%";
    return el("span", { class: "bar", role: "img", "aria-label": (label || "score") + " " + fmt(score) }, [fill]);
  }
  function table(caption, headers, rows, cls) {
    var head = el("tr", {}, headers.map(function (h) { return typeof h === "object" && h && h.nodeType ? el("th", { scope: "col" }, [h]) : el("th", { scope: "col", text: h }); }));
    var body = rows.map(function (row) {
      return el("tr", {}, row.map(function (v) { return typeof v === "object" && v && v.nodeType ? el("td", {}, [v]) : el("td", { text: v }); }));
    });
    return el("div", { class: "table-wrap" }, [
      el("table", { class: cls || "" }, [caption ? el("caption", { text: caption }) : null, el("thead", {}, [head]), el("tbody", {}, body)])
    ]);
  }
  /* ---------- a sample's fields: shared by every variant, or per variant where they differ ---------- */
  function differs(sample, name) {
    var per = sample.variants || {};
    return Object.keys(per).some(function (label) { return name in per[label]; });
  }
  function fieldOf(sample, name, label) {
    var own = (sample.variants || {})[label];
    return own && name in own ? own[name] : sample[name];
  }
  function variantsOf(sample) {
    var present = {};
    sample.results.forEach(function (r) { present[r.run || ""] = true; });
    Object.keys(sample.variants || {}).forEach(function (label) { present[label] = true; });
    return LABELS.filter(function (label) { return present[label]; });
  }
  /* A variant's label (its overrides) with line-break opportunities after = / . - _ and commas: narrow columns wrap
     between words of the label, not inside them (the text itself is unchanged). */
  function labelNode(text, cls) {
    var node = el("span", { class: "label" + (cls ? " " + cls : ""), title: text });
    String(text).split(/(?<=[=\/.,_-])/).forEach(function (part, i) {
      if (i) node.appendChild(document.createElement("wbr"));
      node.appendChild(document.createTextNode(part));
    });
    return node;
  }
  function parseJSON(text) {
    if (text === null || text === undefined) return null;
    if (typeof text !== "string") return text;
    try { return JSON.parse(text); } catch (e) { return text; }
  }
