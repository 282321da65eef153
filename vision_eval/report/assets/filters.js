/* vision-eval report, part 3 (filters, hash parameters, filtering and sorting): concatenated by page.py inside one function scope (no globals). */
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
      COMPARE ? ["Variant", select("f-run", [["", "All variants"]].concat(LABELS.map(function (l) { return [l, l]; }))), "run"] : null,
      COMPARE ? ["Between variants", select("f-changed", [["", "Any"], ["1", "Changed between variants"]]), "changed"] : null,
      ["Status", select("f-status", [["", "Any"], ["processed", "Processed"], ["error", "Error"], ["skipped", "Skipped"]]), "status"],
      ["Outcome", select("f-outcome", [["", "Any"], ["passed", "Passed"], ["failed", "Failed"]]), "outcome"],
      ["Min score", el("input", { id: "f-min", type: "number", min: 0, max: 1, step: 0.05, inputmode: "decimal" }), "min"],
      ["Max score", el("input", { id: "f-max", type: "number", min: 0, max: 1, step: 0.05, inputmode: "decimal" }), "max"],
      ["Search text", el("input", { id: "f-q", type: "search", placeholder: "id, input, response, reasoning\u2026" }), "q"],
      ["Sort", select("f-sort", [["problems", "Errors and failures first"], ["order", "Dataset order"], ["score-asc", "Score: low to high"], ["score-desc", "Score: high to low"]]), "sort"],
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
    ["evaluator", "run", "status", "outcome", "changed", "min", "max", "q", "sort", "size"].forEach(function (key) {
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
    if (!state.evaluator && !state.run) return sample.results;
    return sample.results.filter(function (r) {
      return (!state.evaluator || r.evaluator === state.evaluator) && (!state.run || (r.run || "") === state.run);
    });
  }
  function searchText(sample) {
    if (sample._q === undefined) {
      var parts = [sample.id, sample.input, sample.output, sample.expected, sample.row_error];
      Object.keys(sample.meta || {}).forEach(function (k) { parts.push(sample.meta[k]); });
      Object.keys(sample.variants || {}).forEach(function (label) {
        var own = sample.variants[label];
        parts.push(own.input, own.output, own.expected, own.row_error);
        Object.keys(own.meta || {}).forEach(function (k) { parts.push(own.meta[k]); });
      });
      sample.results.forEach(function (r) { parts.push(r.evaluator, r.error, r.details); });
      sample._q = parts.filter(function (p) { return p; }).join("\n").toLowerCase();
    }
    return sample._q;
  }
  function num(text) { var v = parseFloat(text); return isFinite(v) ? v : null; }
  function matches(sample, lo, hi, q) {
    var rs = selected(sample);
    if ((state.evaluator || state.run) && !rs.length) return false;
    // Changed: the verdict (passed, failed, error) differs between variants, for the chosen evaluator or any.
    if (state.changed && !(sample.changed || []).some(function (e) { return !state.evaluator || e === state.evaluator; })) return false;
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
  /* A card's place under "Errors and failures first": its worst verdict (of the chosen evaluator and variant). */
  function worstOf(sample) {
    return selected(sample).reduce(function (worst, r) { return Math.min(worst, severity(r)); }, 5);
  }
  function filtered() {
    var lo = num(state.min), hi = num(state.max), q = state.q.trim().toLowerCase();
    var out = [];
    for (var i = 0; i < SAMPLES.length; i++) if (matches(SAMPLES[i], lo, hi, q)) out.push(i);
    if (state.sort === "problems") {
      var worst = {};
      out.forEach(function (i) { worst[i] = Math.min(worstOf(SAMPLES[i]), 2); });  // error or failed, then the rest
      out.sort(function (a, b) { return worst[a] - worst[b] || a - b; });
    } else if (state.sort !== "order") {
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
