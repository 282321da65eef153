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
