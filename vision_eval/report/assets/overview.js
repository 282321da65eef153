/* vision-eval report, part 2 (overview: summary, histograms, leaderboard): concatenated by page.py inside one function scope (no globals). */
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
    var caption = h.evaluator + (COMPARE && h.run ? " \u00b7 " + h.run : "") + " \u2014 " + total + " processed";
    return el("figure", { class: "hist" }, [chart, el("figcaption", { text: caption })]);
  }

  /* What the cards show of a big run: every failing/error (and changed) sample up to a cap, a seeded sample of the rest. */
  function samplingNote(s) {
    var bad = COMPARE ? "failing, error or changed samples" : "failing/error samples";
    var text = "Showing " + int(s.shown) + " of " + int(s.total) + " samples: ";
    text += s.failing_shown >= s.failing_total ? "all " + int(s.failing_total) + " " + bad + " (up to " + int(s.failing_cap) + ")"
      : int(s.failing_shown) + " of the " + int(s.failing_total) + " " + bad + " (at most " + int(s.failing_cap) + (COMPARE ? ", those that changed between variants first" : "") + ")";
    text += s.others_total ? ", and a random sample of " + int(s.others_shown) + " of the other " + int(s.others_total) + " (seed " + s.seed + ")." : ".";
    if (s.left_out_for_size > 0) text += " " + plural(s.left_out_for_size, "more chosen sample") + " left out to keep this file under about 10 MB.";
    text += " The overview above covers all " + int(s.total) + " samples (vision-eval-report --max-samples / --max-failing change the choice).";
    return el("p", { class: "notice sampling", role: "note", text: text });
  }

  /* Variant x evaluator: mean score with the leaderboard's 95% bootstrap interval, pass and error rates, over every row. */
  function pivotCell(c, tied) {
    if (!c) return "\u2013";
    var best = c.rank === 1 && !tied ? el("span", { class: "best", text: "\u2605 best" })
      : c.rank > 1 && c.tied_with_best ? el("span", { class: "best tied", title: "not significantly different from the best (" + (c.vs_best_test === "intervals" ? "95% intervals overlap" : c.vs_best_test + " p = " + fmt(c.p_vs_best, 3)) + ")", text: "\u2248 best" }) : null;
    return el("div", { class: "pv" }, [
      el("div", { class: "pv-mean" }, [el("strong", { text: fmt(c.mean_score) }), " ", bar(c.mean_score, "mean score"), " ", best]),
      el("div", { class: "pv-ci", text: isNum(c.ci_low) ? "95% CI " + fmt(c.ci_low) + "\u2013" + fmt(c.ci_high) : "95% CI \u2013" }),
      el("div", { class: "pv-rates", text: "pass " + pct(c.pass_rate) + (c.error_rate ? " \u00b7 errors " + pct(c.error_rate) : "") + " \u00b7 " + int(c.rows) + " scored" + (c.skipped ? ", " + int(c.skipped) + " skipped" : "") + (c.errors ? ", " + plural(c.errors, "error") : "") }),
      c.protocol ? el("div", { class: "muted", text: "protocol " + c.protocol }) : null
    ]);
  }
  function renderPivot(body) {
    var p = DATA.pivot;
    var cells = {};
    p.cells.forEach(function (c) { cells[c.evaluator + "\u0000" + c.variant] = c; });
    // Evaluators no variant scored or erred on (every row skipped): one line under the table, not a row of dashes.
    var scored = {};
    (DATA.summary || []).forEach(function (r) { if (r.processed || r.errors) scored[r.evaluator] = true; });
    var unscored = p.evaluators.filter(function (e) { return !scored[e]; });
    var rows = p.evaluators.filter(function (e) { return scored[e]; }).map(function (e) {
      var own = p.variants.map(function (v) { return cells[e + "\u0000" + v]; }).filter(Boolean);
      var tied = own.every(function (c) { return c.rank === 1; });
      var flips = p.changed[e] || 0, compared = (p.compared || {})[e] || 0;
      /* "no sample changed" only when samples were compared: none in two variants is "not compared" */
      var status = flips ? el("div", {}, [el("a", { href: "#changed=1&evaluator=" + encodeURIComponent(e), class: "changed-link", text: "\u21c4 " + plural(flips, "sample") + " changed" }), el("span", { class: "muted", text: " of " + int(compared) + " compared" })])
        : compared ? el("div", { class: "muted", text: "no sample changed (" + int(compared) + " compared)" })
        : el("div", { class: "muted not-compared", text: p.pairing && p.pairing.paired ? "not compared: no paired sample scored in two variants" : "not compared: no sample in two variants with the same content" });
      var head = el("div", {}, [el("strong", { text: e }), status]);
      return [head].concat(p.variants.map(function (v) { return pivotCell(cells[e + "\u0000" + v], tied); }));
    });
    body.appendChild(el("h3", { id: "pivot-h", text: "Variants compared" }));
    if (p.pairing) body.appendChild(el("p", { class: "notice pairing", role: "note", text: "Pairing: " + p.pairing.sentence + "." }));
    body.appendChild(table("Per evaluator (rows) and variant (columns), over every row: mean score with its 95% bootstrap interval, pass rate and errors. \u201cChanged\u201d: samples whose verdict (passed, failed, error) differs between variants.",
      ["Evaluator"].concat(p.variants.map(function (v) { return labelNode(v); })), rows, "pivot"));
    if (unscored.length) body.appendChild(el("p", { class: "muted unscored", text: "Skipped on every row in every variant: " + unscored.join(", ") + "." }));
  }
  /* In a comparison the pivot says it all at a glance: the long per-variant tables are one click away, so the samples
     start within the first screen. */
  function section(title, content, folded) {
    if (folded) return el("details", { class: "overview-more" }, [el("summary", { text: title }), content]);
    return el("div", {}, [el("h3", { text: title }), content]);
  }

  function renderOverview() {
    var body = document.getElementById("overview-body");
    var runs = DATA.runs || [];
    var samples = SAMPLES.length, results = SAMPLES.reduce(function (n, s) { return n + s.results.length; }, 0);
    var s = DATA.sampling;
    var cards = s && s.shown < s.total ? " (" + int(samples) + " with a card, " + plural(results, "result") + ")" : " (" + plural(results, "result") + ")";
    body.appendChild(el("p", { class: "lead", text: [plural(s ? s.total : samples, "sample") + cards, plural((DATA.evaluators || []).length, "evaluator")].join(", ") + (COMPARE ? ", " + plural(LABELS.length, "variant") : "") + (runs.length > 1 ? ", " + runs.length + " run directories" : "") + "." }));

    if (DATA.pivot) renderPivot(body);
    if (DATA.leaderboard) {
      var board = table(null, DATA.leaderboard.columns, DATA.leaderboard.rows.map(function (r) { return r.map(cell); }), "leaderboard");
      // Folded: the pivot (several variants) or the summary below (one run) shows its numbers at a glance.
      body.appendChild(el("details", { class: "leaderboard-all" }, [el("summary", { id: "leaderboard-h", text: "Leaderboard, every column" }), board]));
    }
    var headers = (COMPARE ? ["Variant"] : []).concat(["Evaluator", "Type", "Rows", "Mean score", "Pass rate", "Processed", "Errors", "Skipped", "Threshold", "Tokens in / out", "Cost"]);
    // One run: the evaluators that skipped every row are one line under the table (a comparison folds the table).
    var idle = COMPARE ? [] : (DATA.summary || []).filter(function (r) { return !r.processed && !r.errors; });
    var rows = (DATA.summary || []).filter(function (r) { return idle.indexOf(r) === -1; }).map(function (r) {
      return (COMPARE ? [r.run] : []).concat([r.evaluator, r.type, int(r.rows), fmt(r.mean_score), pct(r.pass_rate), int(r.processed),
        int(r.errors), int(r.skipped), fmt(r.threshold, 2), int(r.input_tokens) + " / " + int(r.output_tokens), cost(r.cost_usd)]);
    });
    var summary = el("div", {}, [table("Summary per evaluator: mean score and pass rate over processed rows", headers, rows, "summary"),
      idle.length ? el("p", { class: "muted unscored", text: "Skipped on every row: " + idle.map(function (r) { return r.evaluator; }).join(", ") + "." }) : null]);
    body.appendChild(section(COMPARE ? "Per evaluator and variant (" + plural(rows.length, "row") + ")" : "Per evaluator", summary, COMPARE));

    // A histogram of no score says nothing: only those of evaluators that scored rows.
    var hists = (DATA.histograms || []).filter(function (h) { return h.counts.some(function (c) { return c > 0; }); });
    if (hists.length) {
      body.appendChild(section("Score distributions" + (COMPARE ? " (" + hists.length + ")" : ""), el("div", { class: "hists" }, hists.map(histogram)), COMPARE));
    }
    if ((DATA.dimensions || []).length) {
      body.appendChild(section("Dimensions", table("Mean score per dimension", (COMPARE ? ["Variant"] : []).concat(["Evaluator", "Dimension", "Mean score", "", "Rows"]),
        DATA.dimensions.map(function (d) {
          return (COMPARE ? [d.run] : []).concat([d.evaluator, d.dimension, fmt(d.mean_score), bar(d.mean_score, d.dimension), int(d.rows)]);
        }), "dims"), COMPARE));
    }
    var metricRows = [];
    runs.forEach(function (run) {
      Object.keys(run.metrics || {}).forEach(function (name) {
        var m = run.metrics[name];
        metricRows.push((runs.length > 1 ? [run.label || run.directory || ""] : []).concat([name, Object.keys(m).map(function (k) { return k + " = " + cell(m[k]); }).join(", ")]));
      });
    });
    if (metricRows.length) {
      body.appendChild(section("Dataset-level metrics" + (COMPARE ? " (" + plural(metricRows.length, "row") + ")" : ""),
        table(null, (runs.length > 1 ? ["Run"] : []).concat(["Evaluator", "Metrics"]), metricRows, "metrics"), COMPARE));
    }
    var runRows = runs.map(function (run) {
      var t = run.totals || {}, c = run.counts || {}, tm = run.timings || {};
      return [run.label || "\u2013", run.directory || "(in memory)", run.run_id || "\u2013", int(c.samples), int(c.result_rows), fmt(tm.total_s, 2) + " s", cost(t.cost_usd), int(t.cache_hits)];
    });
    var versions = runs.length && runs[0].versions ? Object.keys(runs[0].versions).map(function (k) { return k + " " + (runs[0].versions[k] || "\u2013"); }).join(", ") : "";
    body.appendChild(el("details", { class: "runs" }, [
      el("summary", { text: "Runs (" + runs.length + ")" }),
      table(null, ["Variant", "Directory", "Run id", "Samples", "Result rows", "Time", "Cost", "Cache hits"], runRows),
      versions ? el("p", { class: "muted", text: "Versions: " + versions }) : null,
      (DATA.tables || []).length ? el("p", { class: "muted", text: "Other tables: " + DATA.tables.join(", ") }) : null
    ]));
  }
