/* vision-eval report: renders the JSON data block with DOM text nodes only (no innerHTML). */
(function () {
  "use strict";

  var DATA = JSON.parse(document.getElementById("report-data").textContent);
  var SAMPLES = DATA.samples || [];
  var MULTI_RUN = (DATA.labels || []).filter(function (l) { return l; }).length > 1;
  var DEFAULTS = { evaluator: "", run: "", status: "", outcome: "", min: "", max: "", q: "", sort: "order", size: "50", page: "1" };
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
    var head = el("tr", {}, headers.map(function (h) { return el("th", { scope: "col", text: h }); }));
    var body = rows.map(function (row) {
      return el("tr", {}, row.map(function (v) { return typeof v === "object" && v && v.nodeType ? el("td", {}, [v]) : el("td", { text: v }); }));
    });
    return el("div", { class: "table-wrap" }, [
      el("table", { class: cls || "" }, [caption ? el("caption", { text: caption }) : null, el("thead", {}, [head]), el("tbody", {}, body)])
    ]);
  }
  function parseJSON(text) {
    if (text === null || text === undefined) return null;
    if (typeof text !== "string") return text;
    try { return JSON.parse(text); } catch (e) { return text; }
  }

  /* ---------- overview ---------- */
  function histogram(h) {
    var counts = h.counts, max = Math.max.apply(null, counts.concat([1])), total = counts.reduce(function (a, b) { return a + b; }, 0);
    var W = 260, H = 110, left = 28, bottom = 20, bw = (W - left - 4) / counts.length;
    var described = counts.map(function (c, i) { return (i / 10).toFixed(1) + "\u2013" + ((i + 1) / 10).toFixed(1) + ": " + c; }).join(", ");
    var chart = svg("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img", "aria-label": "Score distribution of " + h.evaluator + " (" + total + " scores): " + described });
    chart.appendChild(svg("line", { x1: left, y1: H - bottom, x2: W - 2, y2: H - bottom, class: "axis" }));
    chart.appendChild(svg("text", { x: left - 4, y: 12, "text-anchor": "end", class: "tick", text: String(max) }));
    chart.appendChild(svg("text", { x: left - 4, y: H - bottom, "text-anchor": "end", class: "tick", text: "0" }));
    counts.forEach(function (c, i) {
      var bh = (H - bottom - 8) * c / max;
      var rect = svg("rect", { x: left + i * bw + 1, y: H - bottom - bh, width: bw - 2, height: bh, class: "hbar" });
      rect.appendChild(svg("title", { text: "scores " + (i / 10).toFixed(1) + "\u2013" + ((i + 1) / 10).toFixed(1) + ": " + c }));
      chart.appendChild(rect);
    });
    [0, 0.5, 1].forEach(function (t) {
      chart.appendChild(svg("text", { x: left + t * (W - left - 4), y: H - 5, "text-anchor": t === 0 ? "start" : t === 1 ? "end" : "middle", class: "tick", text: String(t) }));
    });
    var caption = h.evaluator + (MULTI_RUN && h.run ? " \u00b7 " + h.run : "") + " \u2014 " + total + " processed";
    return el("figure", { class: "hist" }, [chart, el("figcaption", { text: caption })]);
  }

  function renderOverview() {
    var body = document.getElementById("overview-body");
    var runs = DATA.runs || [];
    var samples = SAMPLES.length, results = SAMPLES.reduce(function (n, s) { return n + s.results.length; }, 0);
    if (DATA.total_samples > samples) {
      body.appendChild(el("p", { class: "notice", role: "note", text: "This report shows cards for the first " + samples + " of " + DATA.total_samples + " samples; the overview covers them all (vision-eval-report --max-samples raises the limit)." }));
    }
    body.appendChild(el("p", { class: "lead", text: [plural(samples, "sample"), plural(results, "result"), plural((DATA.evaluators || []).length, "evaluator")].join(", ") + (runs.length > 1 ? ", " + runs.length + " run directories" : "") + "." }));

    if (DATA.leaderboard) {
      body.appendChild(el("h3", { id: "leaderboard-h", text: "Leaderboard" }));
      body.appendChild(table(null, DATA.leaderboard.columns, DATA.leaderboard.rows.map(function (r) { return r.map(cell); }), "leaderboard"));
    }
    var headers = (MULTI_RUN ? ["Run"] : []).concat(["Evaluator", "Type", "Rows", "Mean score", "Pass rate", "Processed", "Errors", "Skipped", "Threshold", "Tokens in / out", "Cost"]);
    var rows = (DATA.summary || []).map(function (r) {
      return (MULTI_RUN ? [r.run] : []).concat([r.evaluator, r.type, int(r.rows), fmt(r.mean_score), pct(r.pass_rate), int(r.processed),
        int(r.errors), int(r.skipped), fmt(r.threshold, 2), int(r.input_tokens) + " / " + int(r.output_tokens), cost(r.cost_usd)]);
    });
    body.appendChild(el("h3", { text: "Per evaluator" }));
    body.appendChild(table("Summary per evaluator: mean score and pass rate over processed rows", headers, rows, "summary"));

    if ((DATA.histograms || []).length) {
      body.appendChild(el("h3", { text: "Score distributions" }));
      body.appendChild(el("div", { class: "hists" }, DATA.histograms.map(histogram)));
    }
    if ((DATA.dimensions || []).length) {
      body.appendChild(el("h3", { text: "Dimensions" }));
      body.appendChild(table("Mean score per dimension", (MULTI_RUN ? ["Run"] : []).concat(["Evaluator", "Dimension", "Mean score", "", "Rows"]),
        DATA.dimensions.map(function (d) {
          return (MULTI_RUN ? [d.run] : []).concat([d.evaluator, d.dimension, fmt(d.mean_score), bar(d.mean_score, d.dimension), int(d.rows)]);
        }), "dims"));
    }
    var metricRows = [];
    runs.forEach(function (run) {
      Object.keys(run.metrics || {}).forEach(function (name) {
        var m = run.metrics[name];
        metricRows.push((runs.length > 1 ? [run.label || run.directory || ""] : []).concat([name, Object.keys(m).map(function (k) { return k + " = " + cell(m[k]); }).join(", ")]));
      });
    });
    if (metricRows.length) {
      body.appendChild(el("h3", { text: "Dataset-level metrics" }));
      body.appendChild(table(null, (runs.length > 1 ? ["Run"] : []).concat(["Evaluator", "Metrics"]), metricRows, "metrics"));
    }
    var runRows = runs.map(function (run) {
      var t = run.totals || {}, c = run.counts || {}, tm = run.timings || {};
      return [run.label || "\u2013", run.directory || "(in memory)", int(c.samples), int(c.result_rows), fmt(tm.total_s, 2) + " s", cost(t.cost_usd), int(t.cache_hits)];
    });
    var versions = runs.length && runs[0].versions ? Object.keys(runs[0].versions).map(function (k) { return k + " " + (runs[0].versions[k] || "\u2013"); }).join(", ") : "";
    body.appendChild(el("details", { class: "runs" }, [
      el("summary", { text: "Runs (" + runs.length + ")" }),
      table(null, ["Label", "Directory", "Samples", "Result rows", "Time", "Cost", "Cache hits"], runRows),
      versions ? el("p", { class: "muted", text: "Versions: " + versions }) : null,
      (DATA.tables || []).length ? el("p", { class: "muted", text: "Other tables: " + DATA.tables.join(", ") }) : null
    ]));
  }

  /* ---------- filters ---------- */
  function field(label, control) {
    return el("div", { class: "field" }, [el("label", { for: control.id, text: label }), control]);
  }
  function select(id, options) {
    return el("select", { id: id, name: id }, options.map(function (o) { return el("option", { value: o[0], text: o[1] }); }));
  }
  function buildFilters() {
    var form = document.getElementById("filters");
    var evaluators = [["", "All evaluators"]].concat((DATA.evaluators || []).map(function (e) { return [e, e]; }));
    var controls = [
      ["Evaluator", select("f-evaluator", evaluators), "evaluator"],
      MULTI_RUN ? ["Run", select("f-run", [["", "All runs"]].concat(DATA.labels.map(function (l) { return [l, l]; }))), "run"] : null,
      ["Status", select("f-status", [["", "Any"], ["processed", "Processed"], ["error", "Error"], ["skipped", "Skipped"]]), "status"],
      ["Outcome", select("f-outcome", [["", "Any"], ["passed", "Passed"], ["failed", "Failed"]]), "outcome"],
      ["Min score", el("input", { id: "f-min", type: "number", min: 0, max: 1, step: 0.05, inputmode: "decimal" }), "min"],
      ["Max score", el("input", { id: "f-max", type: "number", min: 0, max: 1, step: 0.05, inputmode: "decimal" }), "max"],
      ["Search text", el("input", { id: "f-q", type: "search", placeholder: "id, input, response, reasoning\u2026" }), "q"],
      ["Sort", select("f-sort", [["order", "Dataset order"], ["score-asc", "Score: low to high"], ["score-desc", "Score: high to low"]]), "sort"],
      ["Per page", select("f-size", [["25", "25"], ["50", "50"], ["100", "100"], ["250", "250"]]), "size"]
    ].filter(Boolean);
    var timer = null;
    controls.forEach(function (c) {
      var control = c[1], key = c[2];
      form.appendChild(field(c[0], control));
      control.addEventListener(control.tagName === "SELECT" ? "change" : "input", function () {
        state[key] = control.value;
        state.page = "1";
        clearTimeout(timer);
        timer = setTimeout(apply, key === "q" ? 150 : 0);
      });
    });
    var reset = el("button", { type: "button", id: "f-reset", text: "Reset filters" });
    reset.addEventListener("click", function () { state = Object.assign({}, DEFAULTS, { size: state.size }); syncControls(); apply(); });
    form.appendChild(el("div", { class: "field actions" }, [reset]));
    form.addEventListener("submit", function (e) { e.preventDefault(); });
  }
  function syncControls() {
    ["evaluator", "run", "status", "outcome", "min", "max", "q", "sort", "size"].forEach(function (key) {
      var control = document.getElementById("f-" + key);
      if (control) control.value = state[key];
    });
  }
  function readHash() {
    var params = new URLSearchParams(location.hash.replace(/^#/, ""));
    state = Object.assign({}, DEFAULTS);
    Object.keys(DEFAULTS).forEach(function (key) { if (params.has(key)) state[key] = params.get(key); });
    if (state.passed) state.outcome = state.passed;
  }
  function writeHash() {
    var params = new URLSearchParams();
    Object.keys(DEFAULTS).forEach(function (key) { if (state[key] !== DEFAULTS[key]) params.set(key, state[key]); });
    var hash = params.toString();
    try { history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search); } catch (e) { /* file:// in some browsers */ }
  }

  /* ---------- filtering and sorting ---------- */
  function selected(sample) {
    return state.evaluator ? sample.results.filter(function (r) { return r.evaluator === state.evaluator; }) : sample.results;
  }
  function searchText(sample) {
    if (sample._q === undefined) {
      var parts = [sample.id, sample.run, sample.input, sample.output, sample.expected, sample.row_error];
      Object.keys(sample.meta || {}).forEach(function (k) { parts.push(sample.meta[k]); });
      sample.results.forEach(function (r) { parts.push(r.evaluator, r.error, r.details); });
      sample._q = parts.filter(function (p) { return p; }).join("\n").toLowerCase();
    }
    return sample._q;
  }
  function num(text) { var v = parseFloat(text); return isFinite(v) ? v : null; }
  function matches(sample, lo, hi, q) {
    if (state.run && sample.run !== state.run) return false;
    var rs = selected(sample);
    if (state.evaluator && !rs.length) return false;
    // One evaluator chosen: the rows it did not select (skipped) are hidden unless asked for by status.
    if (state.evaluator && !state.status && rs.every(function (r) { return r.status === "skipped"; })) return false;
    if (state.status && !rs.some(function (r) { return r.status === state.status; })) return false;
    if (state.outcome === "failed" && !rs.some(function (r) { return r.status === "processed" && r.passed === false; })) return false;
    if (state.outcome === "passed") {
      var done = rs.filter(function (r) { return r.status === "processed"; });
      if (!done.length || !done.every(function (r) { return r.passed === true; })) return false;
    }
    if ((lo !== null || hi !== null) && !rs.some(function (r) {
      return isNum(r.score) && (lo === null || r.score >= lo) && (hi === null || r.score <= hi);
    })) return false;
    return !q || searchText(sample).indexOf(q) !== -1;
  }
  function sortScore(sample) {
    var scores = selected(sample).filter(function (r) { return r.status === "processed" && isNum(r.score); }).map(function (r) { return r.score; });
    return scores.length ? scores.reduce(function (a, b) { return a + b; }, 0) / scores.length : null;
  }
  function filtered() {
    var lo = num(state.min), hi = num(state.max), q = state.q.trim().toLowerCase();
    var out = [];
    for (var i = 0; i < SAMPLES.length; i++) if (matches(SAMPLES[i], lo, hi, q)) out.push(i);
    if (state.sort !== "order") {
      var sign = state.sort === "score-desc" ? -1 : 1;
      var keys = {};
      out.forEach(function (i) { keys[i] = sortScore(SAMPLES[i]); });
      out.sort(function (a, b) {
        var ka = keys[a], kb = keys[b];
        if (ka === null || kb === null) return ka === kb ? a - b : ka === null ? 1 : -1;  // no score: last
        return ka === kb ? a - b : sign * (ka - kb);
      });
    }
    return out;
  }

  /* ---------- sample cards ---------- */
  function textBlock(title, text, cls) {
    if (text === null || text === undefined || text === "") return null;
    return el("div", { class: "text " + (cls || "") }, [el("h4", { text: title }), el("pre", { text: text })]);
  }
  function imageFigure(sample, image, i) {
    var label = "Image " + (i + 1) + " of sample " + sample.id + (image.name ? " (" + image.name + ")" : "");
    if (image.key && DATA.thumbs[image.key]) {
      var img = el("img", { alt: label, loading: "lazy", decoding: "async" });
      img.src = DATA.thumbs[image.key];
      return el("figure", { class: "thumb" }, [img, el("figcaption", { text: image.name || "image " + (i + 1) })]);
    }
    return el("figure", { class: "thumb missing" }, [
      el("div", { class: "placeholder", role: "img", "aria-label": label + " not available" }, [el("span", { "aria-hidden": "true", text: "\u26a0" }), " image not available"]),
      el("figcaption", { text: (image.name ? image.name + ": " : "") + (image.error || "no reason recorded") })
    ]);
  }
  function renderValue(value, depth) {
    if (value === null || value === undefined) return el("span", { class: "muted", text: "null" });
    if (Array.isArray(value)) {
      if (!value.length) return el("span", { class: "muted", text: "(none)" });
      if (depth > 3) return el("code", { text: JSON.stringify(value) });
      return el("ul", {}, value.map(function (v) { return el("li", {}, [renderValue(v, depth + 1)]); }));
    }
    if (typeof value === "object") {
      if (depth > 3) return el("code", { text: JSON.stringify(value) });
      var dl = el("dl", { class: "kv" });
      Object.keys(value).forEach(function (k) { dl.appendChild(el("dt", { text: k })); dl.appendChild(el("dd", {}, [renderValue(value[k], depth + 1)])); });
      return dl;
    }
    if (typeof value === "number") return document.createTextNode(Number.isInteger(value) ? String(value) : fmt(value, 4));
    return el("span", { class: "pre-wrap", text: String(value) });
  }
  function renderDetails(result) {
    var details = parseJSON(result.details);
    var out = [];
    if (details === null) return out;
    if (typeof details !== "object" || Array.isArray(details)) {
      out.push(el("div", { class: "details-raw" }, [el("h5", { text: "Details" }), el("pre", { text: typeof details === "string" ? details : JSON.stringify(details, null, 2) })]));
      return out;
    }
    var rest = Object.assign({}, details);
    // Judges nest their own lists under details.details: look there too.
    var inner = rest.details && typeof rest.details === "object" && !Array.isArray(rest.details) ? Object.assign({}, rest.details) : null;
    if (inner) rest.details = inner;
    function take(k) {
      var v;
      if (rest[k] !== undefined) { v = rest[k]; delete rest[k]; }
      else if (inner && inner[k] !== undefined) { v = inner[k]; delete inner[k]; }
      return v;
    }
    TOP_ISSUE_KEYS.forEach(function (k) {
      var issue = take(k);
      if (issue === undefined) return;
      var box = el("div", { class: "top-issue", role: "note" }, [el("h5", { text: "Top issue" })]);
      if (issue && typeof issue === "object" && !Array.isArray(issue)) {
        if (issue.severity) box.appendChild(el("p", {}, [el("strong", { text: "Severity: " }), String(issue.severity)]));
        if (issue.problem) box.appendChild(el("p", {}, [el("strong", { text: "Problem: " }), String(issue.problem)]));
        if (issue.fix) box.appendChild(el("p", {}, [el("strong", { text: "Fix: " }), String(issue.fix)]));
        var other = Object.keys(issue).filter(function (x) { return ["severity", "problem", "fix"].indexOf(x) === -1; });
        if (other.length) box.appendChild(renderValue(other.reduce(function (o, x) { o[x] = issue[x]; return o; }, {}), 1));
      } else box.appendChild(renderValue(issue, 1));
      out.push(box);
    });
    REASONING_KEYS.forEach(function (k) {
      if (k === "reason" && result.status === "skipped") return;
      var here = rest[k] !== undefined ? rest[k] : inner ? inner[k] : undefined;
      if (typeof here !== "string") return;
      take(k);
      out.push(el("div", { class: "reasoning" }, [el("h5", { text: k.charAt(0).toUpperCase() + k.slice(1) }), el("p", { class: "pre-wrap", text: here })]));
    });
    LIST_KEYS.forEach(function (k) {
      var v = take(k);
      if (v === undefined) return;
      var title = k === "missing_elements" ? "Missing elements" : k === "whatWorked" ? "What worked" : k.charAt(0).toUpperCase() + k.slice(1);
      out.push(el("div", { class: "list-detail " + k }, [el("h5", { text: title + (Array.isArray(v) ? " (" + v.length + ")" : "") }), renderValue(v, 1)]));
    });
    if (typeof rest.reply === "string") {
      out.push(el("div", { class: "details-raw" }, [el("h5", { text: "Judge reply" }), el("pre", { text: rest.reply })]));
      delete rest.reply;
    }
    if (inner && !Object.keys(inner).length) delete rest.details;
    if (result.status === "skipped") delete rest.reason;
    if (Object.keys(rest).length) out.push(el("details", { class: "more" }, [el("summary", { text: "All details" }), renderValue(rest, 0)]));
    return out;
  }
  function fieldsTable(fields) {
    var rows = fields.map(function (f) {
      return [f.path, f.match || "\u2013", cell(f.expected), cell(f.actual), fmt(f.score),
        f.hit === true ? badge("passed", "hit") : f.hit === false ? badge("failed", "miss") : "\u2013", f.reason || ""];
    });
    var hits = fields.filter(function (f) { return f.hit === true; }).length;
    return el("div", { class: "fields" }, [el("h5", { text: "Fields: " + hits + " of " + fields.length + " hit" }),
      table(null, ["Field", "Match", "Expected", "Actual", "Score", "Hit", "Reason"], rows, "fields-table")]);
  }
  function renderResult(sample, r) {
    var kind = outcome(r) || r.status;
    var head = el("div", { class: "eval-head" }, [
      el("h4", { text: r.evaluator }), el("span", { class: "muted", text: r.type || "" }), badge(kind),
      r.status === "processed" ? el("span", { class: "score" }, ["score ", el("strong", { text: fmt(r.score) }), " ", bar(r.score), isNum(r.threshold) ? " threshold " + fmt(r.threshold, 2) : ""]) : null
    ]);
    var section = el("section", { class: "eval st-" + kind, "data-evaluator": r.evaluator, "data-status": r.status }, [head]);
    var facts = [];
    if (isNum(r.score_std)) facts.push("score std " + fmt(r.score_std));
    if (r.input_tokens || r.output_tokens) facts.push("tokens " + int(r.input_tokens || 0) + " in / " + int(r.output_tokens || 0) + " out");
    if (isNum(r.cost_usd)) facts.push("cost " + cost(r.cost_usd));
    if (isNum(r.latency_s)) facts.push("latency " + fmt(r.latency_s, 2) + " s");
    if (r.cached) facts.push("cached");
    if (facts.length) section.appendChild(el("p", { class: "muted facts", text: facts.join(" \u00b7 ") }));
    if (r.error) section.appendChild(el("p", { class: "error-text" }, [el("strong", { text: "Error: " }), r.error]));
    if (r.status === "skipped") {
      var d = parseJSON(r.details);
      section.appendChild(el("p", { class: "skip-reason" }, [el("strong", { text: "Skipped: " }), d && d.reason ? String(d.reason) : "no reason recorded"]));
    }
    if (r.dimensions && r.dimensions.length) {
      section.appendChild(el("div", { class: "dims" }, [el("h5", { text: "Dimensions" }), el("ul", { class: "dim-list" }, r.dimensions.map(function (d) {
        return el("li", {}, [el("span", { class: "dim-name", text: d.dimension }), bar(d.score, d.dimension), el("span", { class: "dim-score", text: fmt(d.score) + (isNum(d.weight) ? " (weight " + fmt(d.weight, 2) + ")" : "") })]);
      }))]));
    }
    if (r.fields && r.fields.length) {
      section.appendChild(fieldsTable(r.fields));
      section.classList.add("wide");  // a field table needs the room
    }
    append(section, renderDetails(r));
    return section;
  }
  function renderSample(sample) {
    var title = "Sample " + sample.id + (MULTI_RUN && sample.run ? " \u00b7 " + sample.run : "");
    var chips = el("div", { class: "chips" }, sample.results.map(function (r) {
      return el("span", { class: "chip" }, [r.evaluator + ": ", badge(outcome(r) || r.status, (STATUS[outcome(r)] || {}).text + (r.status === "processed" ? " " + fmt(r.score, 2) : ""))]);
    }));
    var media = el("div", { class: "media" }, (sample.images || []).map(function (img, i) { return imageFigure(sample, img, i); }));
    var meta = Object.keys(sample.meta || {});
    var texts = el("div", { class: "texts" }, [
      sample.row_error ? el("p", { class: "error-text" }, [el("strong", { text: "Row error: " }), sample.row_error]) : null,
      textBlock("Input", sample.input), textBlock("Response", sample.output, "response"), textBlock("Expected output", sample.expected, "expected"),
      meta.length ? el("details", { class: "meta" }, [el("summary", { text: "Metadata (" + meta.length + ")" }), renderValue(sample.meta, 1)]) : null
    ]);
    var evals = el("div", { class: "evals" }, selectedFirst(sample).map(function (r) { return renderResult(sample, r); }));
    return el("article", { class: "sample", "data-sample-id": sample.id, "data-run": sample.run || "" }, [
      el("h3", { text: title }), chips, el("div", { class: "sample-body" + (sample.images && sample.images.length ? "" : " no-media") }, [media, texts]), evals
    ]);
  }
  function selectedFirst(sample) {
    if (!state.evaluator) return sample.results;
    return selected(sample).concat(sample.results.filter(function (r) { return r.evaluator !== state.evaluator; }));
  }

  /* ---------- page ---------- */
  function pager(nav, page, pages) {
    clear(nav);
    function button(text, target, label) {
      var b = el("button", { type: "button", text: text, "aria-label": label, disabled: target < 1 || target > pages || target === page });
      b.addEventListener("click", function () { state.page = String(target); apply(); document.getElementById("samples-h").scrollIntoView(); });
      return b;
    }
    append(nav, [button("\u00ab First", 1, "First page"), button("\u2039 Previous", page - 1, "Previous page"),
      el("span", { class: "page-of", text: "Page " + page + " of " + pages }), button("Next \u203a", page + 1, "Next page"), button("Last \u00bb", pages, "Last page")]);
  }
  function apply() {
    var rows = filtered(), size = Math.max(1, parseInt(state.size, 10) || 50);
    var pages = Math.max(1, Math.ceil(rows.length / size));
    var page = Math.min(pages, Math.max(1, parseInt(state.page, 10) || 1));
    state.page = String(page);
    var list = document.getElementById("sample-list");
    clear(list);
    var shown = rows.slice((page - 1) * size, page * size);
    var fragment = document.createDocumentFragment();
    shown.forEach(function (i) { fragment.appendChild(renderSample(SAMPLES[i])); });
    list.appendChild(fragment);
    if (!rows.length) list.appendChild(el("p", { class: "empty", text: "No sample matches these filters." }));
    var count = document.getElementById("match-count");
    count.setAttribute("data-count", rows.length);
    count.setAttribute("data-total", SAMPLES.length);
    count.setAttribute("data-shown", shown.length);
    count.textContent = rows.length === SAMPLES.length ? plural(SAMPLES.length, "sample") :
      rows.length + " of " + plural(SAMPLES.length, "sample") + " match";
    if (shown.length) count.textContent += " \u2014 showing " + ((page - 1) * size + 1) + "\u2013" + ((page - 1) * size + shown.length);
    document.querySelectorAll("nav.pager").forEach(function (nav) { pager(nav, page, pages); });
    writeHash();
  }

  document.getElementById("generated").textContent = "Generated " + (DATA.generated || "");
  renderOverview();
  buildFilters();
  readHash();
  syncControls();
  apply();
  window.addEventListener("hashchange", function () { readHash(); syncControls(); apply(); });
  document.body.setAttribute("data-ready", "true");
})();
