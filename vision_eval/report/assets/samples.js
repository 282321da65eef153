/* vision-eval report, part 4 (sample cards, pagination, start-up): concatenated by page.py inside one function scope (no globals). */
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
  /* A benchmark metric's verdict in one line, from the details its protocol writes (every metric writes "protocol"):
     the prediction as read, what the protocol made of it, and the deciding reference, e.g.
     read "the answer is 22." \u2192 not a number; reference 22. Built from the keys, never per metric or dataset. */
  function quoted(v) { return typeof v === "string" ? JSON.stringify(v) : cell(v); }
  function whyLine(details) {
    var text = whyText(details);
    return text === null ? null : el("p", { class: "why" }, [text]);
  }
  function whyText(details) {
    if (!details || typeof details !== "object" || Array.isArray(details) || details.protocol === undefined) return null;
    var read = ["prediction", "predicted"].map(function (k) { return details[k]; }).filter(function (v) { return v !== undefined && v !== null; })[0];
    if (read === undefined) read = details.raw;
    if (read === undefined) return null;
    var text = "read " + quoted(read);
    if ("prediction_number" in details) text += " \u2192 " + (isNum(details.prediction_number) ? "the number " + cell(details.prediction_number) : "not a number");
    else if (details.unparseable === true) text += " \u2192 no answer the protocol can read";
    else if (Array.isArray(details.found) && !details.found.length) text += " \u2192 no number found";
    var ref = null;
    if (details.answer !== undefined) ref = "reference " + cell(details.answer);
    else if (details.closest !== undefined) ref = "closest reference " + cell(details.closest);
    else if (Array.isArray(details.references)) {
      ref = details.references.length === 1 ? "reference " + cell(details.references[0]) : "references " + details.references.slice(0, 5).map(quoted).join(", ") + (details.references.length > 5 ? ", \u2026 (" + details.references.length + ")" : "");
    } else if (details.expected !== undefined) ref = "reference " + cell(details.expected);
    if (ref !== null) text += "; " + ref;
    if (isNum(details.similarity)) text += " (similarity " + fmt(details.similarity) + ")";
    if (isNum(details.matches) && isNum(details.answers)) text += " (" + details.matches + " of " + plural(details.answers, "reference") + " match)";
    return text;
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
      el("h4", { text: r.evaluator }), COMPARE ? labelNode(r.run || "\u2013", "variant-tag") : el("span", { class: "muted", text: r.type || "" }), badge(kind),
      r.status === "processed" ? el("span", { class: "score" }, ["score ", el("strong", { text: fmt(r.score) }), " ", bar(r.score), isNum(r.threshold) ? " threshold " + fmt(r.threshold, 2) : ""]) : null
    ]);
    var section = el("section", { class: "eval st-" + kind, "data-evaluator": r.evaluator, "data-status": r.status, "data-run": r.run || "" }, [head]);
    var facts = [];
    if (isNum(r.score_std)) facts.push("score std " + fmt(r.score_std));
    if (r.input_tokens || r.output_tokens) facts.push("tokens " + int(r.input_tokens || 0) + " in / " + int(r.output_tokens || 0) + " out");
    if (isNum(r.cost_usd)) facts.push("cost " + cost(r.cost_usd));
    if (isNum(r.latency_s)) facts.push("latency " + fmt(r.latency_s, 2) + " s");
    if (r.cached) facts.push("cached");
    if (facts.length) section.appendChild(el("p", { class: "muted facts", text: facts.join(" \u00b7 ") }));
    if (r.status !== "skipped") append(section, [whyLine(parseJSON(r.details))]);
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
  function verdictLabel(r) {
    var kind = outcome(r) || r.status;
    return badge(kind, (STATUS[kind] || {}).text + (r.status === "processed" ? " " + fmt(r.score, 2) : ""));
  }
  function sampleTexts(sample, labels) {
    var meta = Object.keys(sample.meta || {});
    var blocks = [
      sample.row_error ? el("p", { class: "error-text" }, [el("strong", { text: "Row error: " }), sample.row_error]) : null,
      textBlock("Input", sample.input), textBlock("Response", sample.output, "response"), textBlock("Expected output", sample.expected, "expected"),
      meta.length ? el("details", { class: "meta" }, [el("summary", { text: "Metadata (" + meta.length + ")" }), renderValue(sample.meta, 1)]) : null
    ];
    // Fields that differ between variants (a candidate's response, a row error): one block per variant, side by side.
    [["output", "Response", "response"], ["input", "Input", ""], ["expected", "Expected output", "expected"], ["row_error", "Row error", "error"]].forEach(function (f) {
      if (!labels || !differs(sample, f[0])) return;
      blocks.push(el("div", { class: "per-variant " + f[2] }, [el("h4", { text: f[1] + " per variant" }), el("div", { class: "variant-grid" }, labels.map(function (label) {
        var value = fieldOf(sample, f[0], label);
        return el("div", { class: "text" }, [el("h5", { class: "variant-name" }, [labelNode(label)]), value === null || value === undefined || value === "" ? el("p", { class: "muted", text: "(none)" }) : el("pre", { text: value })]);
      }))]));
    });
    if (labels && differs(sample, "meta")) {
      blocks.push(el("details", { class: "meta" }, [el("summary", { text: "Metadata per variant" }), el("div", { class: "variant-grid" }, labels.map(function (label) {
        return el("div", {}, [el("h5", { class: "variant-name" }, [labelNode(label)]), renderValue(fieldOf(sample, "meta", label) || {}, 1)]);
      }))]));
    }
    return el("div", { class: "texts" }, blocks);
  }
  function sampleMedia(sample, labels) {
    if (!labels || !differs(sample, "images")) return el("div", { class: "media" }, (sample.images || []).map(function (img, i) { return imageFigure(sample, img, i); }));
    return el("div", { class: "media" }, labels.map(function (label) {
      return el("div", { class: "variant-media" }, [el("h5", { class: "variant-name" }, [labelNode(label)])].concat((fieldOf(sample, "images", label) || []).map(function (img, i) { return imageFigure(sample, img, i); })));
    }));
  }
  function hasMedia(sample, labels) {
    return (sample.images && sample.images.length) || (labels && differs(sample, "images"));
  }
  /* The evaluators that skipped a sample, folded into one line (grouped by reason); their boxes are made when opened. */
  function skippedLine(sample, results, text) {
    var reasons = {}, order = [];
    results.forEach(function (r) {
      var d = parseJSON(r.details), reason = d && typeof d === "object" && d.reason ? String(d.reason) : "no reason recorded";
      if (!(reason in reasons)) { reasons[reason] = []; order.push(reason); }
      if (reasons[reason].indexOf(r.evaluator) === -1) reasons[reason].push(r.evaluator);
    });
    var names = [];
    results.forEach(function (r) { if (names.indexOf(r.evaluator) === -1) names.push(r.evaluator); });
    var body = el("div", { class: "skipped-body" });
    var fold = el("details", { class: "skipped-evals" }, [
      el("summary", {}, [badge("skipped", text + " " + plural(names.length, "evaluator")), " " + names.join(", ")]), body
    ]);
    fold.addEventListener("toggle", function () {
      if (!fold.open || body.firstChild) return;
      append(body, order.map(function (reason) { return el("p", { class: "skip-reason" }, [el("strong", { text: reasons[reason].join(", ") + ": " }), reason]); }));
      body.appendChild(el("div", { class: "evals" }, results.map(function (r) { return renderResult(sample, r); })));
    });
    return fold;
  }
  function bySeverity(results) {
    return results.map(function (r, i) { return [severity(r), i, r]; }).sort(function (a, b) { return a[0] - b[0] || a[1] - b[1]; }).map(function (x) { return x[2]; });
  }
  function renderSample(sample) {
    if (COMPARE) return renderComparison(sample);
    var done = sample.results.filter(function (r) { return r.status !== "skipped"; });
    var skipped = sample.results.filter(function (r) { return r.status === "skipped"; });
    var chips = el("div", { class: "chips" }, bySeverity(done).map(function (r) {
      return el("span", { class: "chip" }, [r.evaluator + ": ", verdictLabel(r)]);
    }));
    // One evaluator chosen: only its box. Otherwise every evaluator that scored the sample, what went wrong first.
    var shown = state.evaluator ? selected(sample) : bySeverity(done);
    var evals = el("div", { class: "evals" }, shown.map(function (r) { return renderResult(sample, r); }));
    return el("article", { class: "sample", "data-sample-id": sample.id }, [
      el("h3", { text: "Sample " + sample.id }), chips,
      el("div", { class: "sample-body" + (hasMedia(sample) ? "" : " no-media") }, [sampleMedia(sample), sampleTexts(sample)]), evals,
      skipped.length && !state.evaluator ? skippedLine(sample, skipped, "skipped by") : null
    ]);
  }
  /* One card per sample: a verdict table (evaluators x variants), then each evaluator's details, variant by variant. */
  function renderComparison(sample) {
    var labels = variantsOf(sample), changed = sample.changed || [];
    var byKey = {};
    sample.results.forEach(function (r) { byKey[r.evaluator + "\u0000" + (r.run || "")] = r; });
    var present = (DATA.evaluators || []).filter(function (e) { return labels.some(function (l) { return byKey[e + "\u0000" + l]; }); });
    function resultsOf(e) { return labels.map(function (l) { return byKey[e + "\u0000" + l]; }).filter(Boolean); }
    // Evaluators that skipped the sample in every variant: one folded line, not a row of "skipped" per variant.
    var allSkipped = present.filter(function (e) { return resultsOf(e).every(function (r) { return r.status === "skipped"; }); });
    var evaluators = present.filter(function (e) { return allSkipped.indexOf(e) === -1 || e === state.evaluator; });
    if (state.evaluator && evaluators.indexOf(state.evaluator) > 0) evaluators = [state.evaluator].concat(evaluators.filter(function (e) { return e !== state.evaluator; }));
    var head = el("tr", {}, [el("th", { scope: "col", text: "Evaluator" })].concat(labels.map(function (l) {
      return el("th", { scope: "col", class: "variant-name" + (state.run === l ? " current" : "") }, [labelNode(l)]);
    })));
    var rows = [];
    evaluators.forEach(function (e) {
      var flip = changed.indexOf(e) !== -1;
      // A benchmark metric's why, without a click: once under the row when every variant read the same, else per cell.
      var whys = labels.map(function (l) { var r = byKey[e + "\u0000" + l]; return r && r.status !== "skipped" ? whyText(parseJSON(r.details)) : null; });
      var one = whys.every(function (w) { return w === whys[0]; });
      rows.push(el("tr", { class: flip ? "changed" : null, "data-evaluator": e }, [
        el("th", { scope: "row" }, [e, flip ? el("span", { class: "changed-mark", text: " \u21c4 changed" }) : null])
      ].concat(labels.map(function (l, i) {
        var r = byKey[e + "\u0000" + l];
        return el("td", { "data-run": l, class: state.run === l ? "current" : null }, [
          r ? verdictLabel(r) : el("span", { class: "muted", text: "no result" }), !one && whys[i] ? el("div", { class: "why", text: whys[i] }) : null
        ]);
      }))));
      if (one && whys[0]) rows.push(el("tr", { class: "why-row" + (flip ? " changed" : ""), "data-evaluator": e }, [el("td", { colspan: labels.length + 1, class: "why", text: whys[0] })]));
    });
    var verdicts = el("div", { class: "table-wrap" }, [el("table", { class: "verdicts" }, [
      el("caption", { text: "Verdict per variant" + (changed.length ? " \u2014 changed between variants: " + changed.join(", ") : "") }),
      el("thead", {}, [head]), el("tbody", {}, rows)
    ])]);
    // One evaluator chosen: only its box.
    var details = evaluators.filter(function (e) { return !state.evaluator || e === state.evaluator; }).map(function (e) {
      var rs = resultsOf(e);
      var open = changed.indexOf(e) !== -1 || state.evaluator === e;
      return el("details", { class: "compare-evals", "data-evaluator": e, open: open }, [
        el("summary", { text: e + ": details for " + plural(rs.length, "variant") }),
        el("div", { class: "evals" }, rs.map(function (r) { return renderResult(sample, r); }))
      ]);
    });
    return el("article", { class: "sample compare" + (changed.length ? " changed" : ""), "data-sample-id": sample.id, "data-changed": changed.join(",") }, [
      el("h3", { text: "Sample " + sample.id }),
      el("div", { class: "sample-body" + (hasMedia(sample, labels) ? "" : " no-media") }, [sampleMedia(sample, labels), sampleTexts(sample, labels)]),
      verdicts
    ].concat(details, [allSkipped.length && !state.evaluator ? skippedLine(sample, [].concat.apply([], allSkipped.map(resultsOf)), "skipped in every variant by") : null]));
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
  if (DATA.sampling && DATA.sampling.shown < DATA.sampling.total) {
    var filters = document.getElementById("filters");
    filters.parentNode.insertBefore(samplingNote(DATA.sampling), filters);
  }
  buildFilters();
  readHash();
  syncControls();
  apply();
  window.addEventListener("hashchange", function () { readHash(); syncControls(); apply(); });
  document.body.setAttribute("data-ready", "true");
