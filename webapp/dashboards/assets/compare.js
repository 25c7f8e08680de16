// The compare page: each run's best score and reward overlaid, against attempts, wall-clock or
// cumulative executor-seconds (switchable without a reload). Curves come from the page (json_script).
(function () {
  const curves = JSON.parse(document.getElementById("curves").textContent);
  const titles = { finished: "attempts finished", wall_s: "wall-clock (s)", exec_s: "cumulative executor-seconds" };
  const config = { displayModeBar: false, responsive: true };
  const layout = (title, x) => ({ title: { text: title, font: { size: 14 } }, margin: { l: 50, r: 10, t: 36, b: 40 },
    xaxis: { title: { text: x }, automargin: true }, legend: { orientation: "h", yref: "container", y: 0, yanchor: "bottom" } });
  window.practicum = { charts: 0 };

  function draw() {
    const x = document.getElementById("x-axis").value;
    Plotly.react("chart-best", curves.map((c) => ({
      x: c.points.map((p) => p[x]), y: c.points.map((p) => p.best), mode: "lines", name: c.label, line: { shape: "hv" },
    })), layout("Best score", titles[x]), config);
    Plotly.react("chart-reward", curves.map((c) => ({
      x: c.points.map((p) => p[x]), y: rolling(c.points.map((p) => p.reward), 10), mode: "lines", name: c.label,
    })), layout("Reward (rolling mean of 10)", titles[x]), config);
    window.practicum.charts += 1;
  }

  function rolling(values, n) {
    return values.map((_, i) => {
      const w = values.slice(Math.max(0, i - n + 1), i + 1).filter((v) => v !== null);
      return w.length ? w.reduce((s, v) => s + v, 0) / w.length : null;
    });
  }

  document.getElementById("x-axis").addEventListener("change", draw);
  draw();
})();
