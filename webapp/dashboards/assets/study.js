// The study page: per arm, the mean curve over seeds with its 95% band (reward against attempts and
// wall-clock, valid rate against attempts), the valid rate per tenth of the budget with Wilson intervals, the
// test of each arm against the first, and the runs. The data come from data.json (webapp.runs.study_reads);
// the smoothing slider asks for them again, and while the study is queued or running the page polls every
// few seconds. window.practicum counts draws and applied polls.
(function () {
  "use strict";
  const script = document.currentScript;
  const live = document.getElementById("study-live");
  const pollMs = 1000 * Number(live.dataset.pollS || 3);
  const slider = document.getElementById("smoothing");
  const config = { displayModeBar: false, responsive: true };
  const colours = ["#3457d5", "#d9480f", "#2b8a3e", "#862e9c", "#c2255c", "#0b7285"];
  let data = JSON.parse(document.getElementById("study-data").textContent);
  window.practicum = { draws: 0, updates: 0 };

  function layout(xTitle, yTitle) {
    return {
      margin: { l: 60, r: 10, t: 10, b: 40 }, uirevision: "study",
      xaxis: { title: { text: xTitle }, automargin: true }, yaxis: { title: { text: yTitle }, automargin: true },
      showlegend: true, legend: { orientation: "h", yref: "container", y: 0, yanchor: "bottom" },
    };
  }

  function rgba(hex, alpha) {
    const n = parseInt(hex.slice(1), 16);
    return `rgba(${n >> 16}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
  }

  // One arm's band (upper edge, then lower edge filled up to it) and its mean line: points are
  // [mean, low, high] or null where no seed has a value.
  function bandTraces(arm, seeds, xs, points, colour) {
    const pick = (i) => points.map((p) => (p === null ? null : p[i]));
    const edge = { mode: "lines", line: { width: 0 }, hoverinfo: "skip", showlegend: false, legendgroup: arm };
    const seedWords = `${seeds} seed${seeds === 1 ? "" : "s"}`;
    return [
      { ...edge, x: xs, y: pick(2) },
      { ...edge, x: xs, y: pick(1), fill: "tonexty", fillcolor: rgba(colour, 0.18) },
      { x: xs, y: pick(0), mode: "lines", line: { color: colour }, legendgroup: arm, name:
        `${arm}: mean over ${seedWords}, band: 95% interval` },
    ];
  }

  function curveChart(id, field, xTitle, yTitle, byTime) {
    const traces = data.arms.flatMap((arm, i) => {
      const curves = byTime ? data.time.arms[arm] : data.curves[arm];
      const points = curves[field] || [];
      const xs = byTime ? data.time.grid : points.map((_, j) => j + 1);
      return bandTraces(arm, curves.seeds, xs, points, colours[i % colours.length]);
    });
    const lay = layout(xTitle, yTitle);
    if (field === "valid") lay.yaxis.range = [0, 1];  // a rate; the band's t interval may reach past it
    if (!byTime) lay.xaxis.tickformat = "d";  // attempts are whole numbers
    Plotly.react(id, traces, lay, config);
  }

  function windowsChart() {
    const traces = data.arms.map((arm, i) => {
      const rows = data.windows[arm];
      return {
        type: "bar", name: arm, marker: { color: colours[i % colours.length] },
        x: rows.map((w) => (w.from === w.to ? `${w.to}` : `${w.from}–${w.to}`)), y: rows.map((w) => w.valid_rate),
        error_y: {
          type: "data", symmetric: false,
          array: rows.map((w) => (w.valid_rate_ci ? w.valid_rate_ci[1] - w.valid_rate : null)),
          arrayminus: rows.map((w) => (w.valid_rate_ci ? w.valid_rate - w.valid_rate_ci[0] : null)),
        },
      };
    });
    const lay = layout("attempts (positions in the budget)", "valid rate");
    Plotly.react("chart-windows", traces, { ...lay, barmode: "group", yaxis: { ...lay.yaxis, range: [0, 1] } }, config);
  }

  function fixed(value, digits) {
    return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
  }

  function interval(pair, digits) {
    return pair ? `[${fixed(pair[0], digits)}, ${fixed(pair[1], digits)}]` : "–";
  }

  function cell(text) {
    const td = document.createElement("td");
    td.textContent = text;
    return td;
  }

  function testRow(t) {
    const a = t.counts[t.arm], r = t.counts[t.reference];
    const row = document.createElement("tr");
    row.className = "study-test";
    [
      `${t.arm} vs ${t.reference}`, `${a.valid}/${a.attempts} vs ${r.valid}/${r.attempts}`,
      `${fixed(a.rate, 3)} vs ${fixed(r.rate, 3)}`, `${fixed(t.difference, 3)} ${interval(t.difference_ci, 3)}`,
      `${fixed(t.statistic, 2)}, p = ${fixed(t.p_value, 3)}`, t.seed_differences.map((d) => fixed(d, 3)).join(", ") || "–",
      interval(t.seed_difference_ci, 3), t.words,
    ].forEach((text) => row.appendChild(cell(text)));
    return row;
  }

  function showTests() {
    if (!data.tests.length || !data.tests.some((t) => t.seeds.length)) return;
    document.querySelector("#study-tests tbody").replaceChildren(...data.tests.map(testRow));
  }

  function showRuns() {
    const rows = data.runs.map((run) => {
      const row = document.createElement("tr");
      [run.seed, run.arm, run.status, run.attempts_done].forEach((v) => row.appendChild(cell(String(v))));
      const link = document.createElement("a");
      link.href = `/runs/${run.id}/`;
      link.textContent = `#${run.id}`;
      row.appendChild(cell("")).appendChild(link);
      return row;
    });
    document.querySelector("#study-runs tbody").replaceChildren(...rows);
  }

  function hasCurves() {
    return data.arms.some((arm) => (data.curves[arm].reward || []).length);
  }

  function draw() {
    document.getElementById("study-status").textContent = data.status;
    const cancel = document.getElementById("study-cancel-form");
    if (cancel) cancel.hidden = !active();
    document.getElementById("study-waiting").hidden = hasCurves();
    curveChart("chart-reward-attempts", "reward", "attempts finished", "reward", false);
    curveChart("chart-reward-time", "reward", "wall-clock (s since the run started)", "reward", true);
    curveChart("chart-valid-attempts", "valid", "attempts finished", "valid rate", false);
    windowsChart();
    showTests();
    showRuns();
    window.practicum.draws += 1;
  }

  function active() {
    return data.status === "queued" || data.status === "running";
  }

  async function fetchData() {
    const response = await fetch(`${script.dataset.url}?smoothing=${slider.value}`, { headers: { Accept: "application/json" } });
    if (!response.ok) return;
    data = await response.json();
    draw();
    window.practicum.updates += 1;
  }

  async function poll() {
    try {
      await fetchData();
    } finally {
      live.textContent = active() ? `updating live every ${pollMs / 1000} s while the study runs` : "";
      if (active()) setTimeout(poll, pollMs);
    }
  }

  slider.addEventListener("input", () => { document.getElementById("smoothing-value").textContent = slider.value; });
  slider.addEventListener("change", fetchData);
  draw();
  if (active()) setTimeout(poll, pollMs);
})();
