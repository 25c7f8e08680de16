// The compare page: one best-score chart per metric and one reward chart per reward scale (the groups come
// from the page), against attempts, wall-clock or cumulative executor-seconds (switchable without a
// reload). While any compared run is queued or running, the page polls the curves URL for the active runs
// every few seconds, redraws with Plotly.react (zoom and pan kept) and refreshes the best submissions'
// numbers; it stops once every run is inactive. With grouping on, a chart draws each settings group's mean
// reward with its 95% band across the group's runs (webapp.dashboards.compare.settings_groups).
// window.practicum counts draws (charts) and applied polls (updates).
(function () {
  let curves = JSON.parse(document.getElementById("curves").textContent);
  const groups = JSON.parse(document.getElementById("charts").textContent);
  let settingsGroups = JSON.parse(document.getElementById("groups").textContent);
  const script = document.currentScript;
  const live = document.getElementById("compare-live");
  const pollMs = 1000 * Number(live.dataset.pollS || 3);
  const titles = { finished: "attempts finished", wall_s: "wall-clock (s)", exec_s: "cumulative executor-seconds" };
  const config = { displayModeBar: false, responsive: true };
  window.practicum = { charts: 0, updates: 0 };

  function layout(yTitle, x) {
    return {
      margin: { l: 60, r: 10, t: 10, b: 40 }, uirevision: x, // keep zoom across live redraws, not axis switches
      xaxis: { title: { text: titles[x] }, automargin: true }, yaxis: { title: { text: yTitle }, automargin: true },
      showlegend: true, legend: { orientation: "h", yref: "container", y: 0, yanchor: "bottom" },
    };
  }

  function curvesOf(group) {
    return group.run_ids.map((id) => curves.find((c) => c.id === id)).filter((c) => c);
  }

  function draw() {
    const x = document.getElementById("x-axis").value;
    for (const g of groups.best) {
      Plotly.react(g.dom_id, curvesOf(g).map((c) => ({
        x: c.points.map((p) => p[x]), y: c.points.map((p) => p.best[g.metric] ?? null), mode: "lines",
        name: c.label, line: { shape: "hv" },
      })), layout(g.axis, x), config);
    }
    for (const g of groups.reward) {
      Plotly.react(g.dom_id, curvesOf(g).map((c) => ({
        x: c.points.map((p) => p[x]), y: rolling(c.points.map((p) => p.reward), 10), mode: "lines", name: c.label,
      })), layout(g.axis, x), config);
    }
    if (script.dataset.grouped) drawGroups();
    window.practicum.charts += 1;
  }

  // Each group: its band (upper edge, then the lower edge filled up to it) and its mean line; points are
  // [mean, low, high], or null where none of its runs has reached that attempt.
  function drawGroups() {
    const traces = settingsGroups.flatMap((g) => {
      const xs = g.reward.map((_, i) => i + 1);
      const pick = (i) => g.reward.map((p) => (p === null ? null : p[i]));
      const edge = { x: xs, mode: "lines", line: { width: 0 }, hoverinfo: "skip", showlegend: false, legendgroup: g.label };
      const runs = `${g.run_ids.length} run${g.run_ids.length === 1 ? "" : "s"}`;
      return [
        { ...edge, y: pick(2) },
        { ...edge, y: pick(1), fill: "tonexty" },
        { x: xs, y: pick(0), mode: "lines", legendgroup: g.label, name: `${g.label}: mean over ${runs}, band: 95% interval` },
      ];
    });
    Plotly.react("chart-groups", traces, layout("reward", "finished"), config);
  }

  function rolling(values, n) {
    return values.map((_, i) => {
      const w = values.slice(Math.max(0, i - n + 1), i + 1).filter((v) => v !== null);
      return w.length ? w.reduce((s, v) => s + v, 0) / w.length : null;
    });
  }

  function fixed(value, digits) {
    return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
  }

  // The numbers of each run's best submission; a new best attempt also says its code is a reload away.
  function showBest(best) {
    for (const b of best) {
      const card = document.querySelector(`.best-submission[data-run="${b.id}"]`);
      if (!card || b.attempt === null) continue;
      card.querySelector(".best-numbers").innerHTML =
        `<a href="/runs/${b.id}/attempts/${b.attempt}/">attempt ${b.attempt}</a> · score <strong>${fixed(b.score, 5)}</strong>` +
        ` · reward ${fixed(b.reward, 3)} · Δt ${fixed(b.duration_s, 2)} s`;
      card.querySelector(".best-stale").hidden = String(b.attempt) === card.dataset.attempt;
    }
  }

  function anyActive() {
    return curves.some((c) => c.active);
  }

  function showLive() {
    live.textContent = anyActive() ? `updating live every ${pollMs / 1000} s while a run is active` : "";
  }

  // A run asked for and not returned is no longer visible: its line stays as it was, and is not asked again.
  function fresher(curve, asked, fresh) {
    if (!asked.includes(curve.id)) return curve;
    return fresh.find((f) => f.id === curve.id) || { ...curve, active: false };
  }

  async function poll() {
    const active = curves.filter((c) => c.active).map((c) => c.id);
    try {
      const grouped = script.dataset.grouped;  // a group's band needs all of its runs, finished ones too
      const asked = grouped ? curves.map((c) => c.id) : active;
      const url = `${script.dataset.curvesUrl}?runs=${asked.join(",")}${grouped ? "&group=1" : ""}`;
      const response = await fetch(url, { headers: { Accept: "application/json" } });
      if (response.ok) {
        const data = await response.json();
        curves = curves.map((c) => fresher(c, asked, data.curves));
        if (data.groups) settingsGroups = data.groups;
        draw();
        showBest(data.best);
        window.practicum.updates += 1;
      }
    } finally {
      showLive();
      if (anyActive()) setTimeout(poll, pollMs);
    }
  }

  document.getElementById("x-axis").addEventListener("change", draw);
  draw();
  showLive();
  if (anyActive()) setTimeout(poll, pollMs);
})();
