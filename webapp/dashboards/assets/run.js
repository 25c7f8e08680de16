// The live run page: one websocket, a snapshot on connect, then incremental events ordered by `seq`.
// A gap in seq (or a reconnect) asks the server for a fresh snapshot, so nothing is ever double-counted.
(function () {
  const runId = JSON.parse(document.getElementById("run-id").textContent);
  const state = { seq: 0, attempts: new Map(), metrics: new Map(), total: 0, run: null };
  const $ = (id) => document.getElementById(id);
  let socket = null, retryMs = 500, drawPending = false;
  window.practicum = { state, charts: 0 };

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}/ws/runs/${runId}/`);
    socket.onopen = () => { retryMs = 500; $("live").textContent = "live"; };
    socket.onclose = (event) => {
      $("live").textContent = event.code === 4403 ? "not allowed" : "reconnecting…";
      if (event.code !== 4403) setTimeout(connect, retryMs = Math.min(retryMs * 2, 8000));
    };
    socket.onmessage = (event) => receive(JSON.parse(event.data));
  }

  function receive(message) {
    if (message.type === "snapshot") return applySnapshot(message);
    if (message.seq <= state.seq) return;  // already included in the snapshot
    if (message.seq > state.seq + 1) { socket.send(JSON.stringify({ type: "resync" })); return; }
    state.seq = message.seq;
    if (message.type === "attempt") {
      const a = message.attempt;
      if (!state.attempts.has(a.id)) state.total += 1;
      state.attempts.set(a.id, a);
      if (message.best_score !== undefined && state.run) state.run.best_score = message.best_score;
    } else if (message.type === "metrics") {
      state.metrics.set(message.step.version, message.step);
    } else if (message.type === "run") {
      state.run = message.run;
    }
    scheduleDraw();
  }

  function applySnapshot(snapshot) {
    state.seq = snapshot.seq;
    state.run = snapshot.run;
    state.total = snapshot.attempts_total;
    state.attempts = new Map(snapshot.attempts.map((a) => [a.id, a]));
    state.metrics = new Map(snapshot.metrics.map((m) => [m.version, m]));
    scheduleDraw();
  }

  function scheduleDraw() {
    if (drawPending) return;
    drawPending = true;
    requestAnimationFrame(() => { drawPending = false; draw(); });
  }

  const layout = (title, x, y) => ({ title: { text: title, font: { size: 14 } }, margin: { l: 50, r: 10, t: 36, b: 40 },
    xaxis: { title: { text: x } }, yaxis: { title: { text: y } }, legend: { orientation: "h" } });
  const config = { displayModeBar: false, responsive: true };

  function draw() {
    const all = [...state.attempts.values()].sort((a, b) => a.number - b.number);
    const done = all.filter((a) => a.finished_at && a.status !== "lost");
    const steps = [...state.metrics.values()].sort((a, b) => a.version - b.version);
    const t0 = state.run && state.run.started_at ? Date.parse(state.run.started_at) : (done[0] ? Date.parse(done[0].started_at) : 0);
    const wall = done.map((a) => (Date.parse(a.finished_at) - t0) / 1000);
    const best = runningBest(done, state.run);
    Plotly.react("chart-reward", [
      { x: done.map((a) => a.number), y: done.map((a) => a.reward), mode: "markers", name: "reward", marker: { size: 5 } },
      { x: done.map((a) => a.number), y: best, mode: "lines", name: "best score", line: { shape: "hv" } },
    ], layout("Reward and best score", "attempt", ""), config);
    Plotly.react("chart-reward-time", [
      { x: wall, y: done.map((a) => a.reward), mode: "markers", name: "reward", marker: { size: 5 } },
      { x: wall, y: best, mode: "lines", name: "best score", line: { shape: "hv" } },
    ], layout("Against wall-clock", "seconds", ""), config);
    Plotly.react("chart-valid", [{ x: done.map((a) => a.number), y: rolling(done.map((a) => (a.valid ? 1 : 0)), 20), mode: "lines", name: "valid" }],
      layout("Valid-submission rate (rolling 20)", "attempt", "rate"), config);
    Plotly.react("chart-duration", [{ x: steps.map((s) => s.version), y: steps.map((s) => s["charts/duration_mean_s"]), mode: "lines+markers" }],
      layout("Mean Δt per update", "policy version", "seconds"), config);
    const stages = ["imports_done", "data_loaded", "model_defined", "model_trained", "predictions_made", "submission_written"];
    Plotly.react("chart-funnel", [{ type: "funnel", y: stages, x: stages.map((s) => done.filter((a) => a.stages.includes(s)).length) }],
      { ...layout("Stage funnel", "", ""), margin: { l: 130, r: 10, t: 36, b: 30 } }, config);
    const groups = groupBy(done, (a) => a.family || a.prompt_kind);
    Plotly.react("chart-scatter", Object.entries(groups).map(([name, items]) => ({
      x: items.map((a) => a.duration_s), y: items.map((a) => a.reward), mode: "markers", name, marker: { size: 6 },
    })), { ...layout("Δt against reward", "Δt (s, log)", "reward"), xaxis: { type: "log", title: { text: "Δt (s)" } } }, config);
    const keys = ["losses/policy", "charts/entropy", "losses/kl", "charts/duration_weight_max"];
    Plotly.react("chart-learner", keys.map((k) => ({ x: steps.map((s) => s.version), y: steps.map((s) => s[k]), mode: "lines+markers", name: k })),
      layout("Learner", "policy version", ""), config);
    Plotly.react("chart-staleness", ["charts/staleness_mean", "charts/staleness_max"].map((k) => ({
      x: steps.map((s) => s.version), y: steps.map((s) => s[k]), mode: "lines+markers", name: k })), layout("Staleness", "policy version", "versions"), config);
    window.practicum.charts += 1;
    drawStats(done);
    drawTable(all);
  }

  function runningBest(done, run) {
    const higher = !(run && run.higher_is_better === false);
    let best = null;
    return done.map((a) => {
      if (a.valid && a.score !== null && (best === null || (higher ? a.score > best : a.score < best))) best = a.score;
      return best;
    });
  }
  const rolling = (xs, n) => xs.map((_, i) => { const w = xs.slice(Math.max(0, i - n + 1), i + 1); return w.reduce((s, v) => s + v, 0) / w.length; });
  const groupBy = (xs, key) => xs.reduce((g, x) => ((g[key(x)] = g[key(x)] || []).push(x), g), {});
  const fmt = (v, d = 4) => (v === null || v === undefined ? "–" : Number(v).toFixed(d));

  function drawStats(done) {
    const run = state.run || {};
    $("stat-status").textContent = run.status || "";
    $("stat-attempts").textContent = state.total;
    $("stat-best").textContent = fmt(run.best_score);
    $("stat-valid").textContent = done.length ? fmt(done.filter((a) => a.valid).length / done.length, 2) : "–";
    $("stat-version").textContent = run.policy_version ?? "";
  }

  function drawTable(all) {
    $("attempts-total").textContent = `(${state.total}; newest 100 shown)`;
    const rows = all.slice(-100).reverse().map((a) => `<tr>
      <td><a href="/runs/${runId}/attempts/${a.number}/">${a.number}</a></td><td>${a.status}</td><td>${a.stage_count}</td>
      <td>${fmt(a.score)}</td><td>${fmt(a.reward, 3)}</td><td>${fmt(a.duration_s, 2)}</td><td>${a.policy_version}</td>
      <td>${a.prompt_kind}</td><td>${a.family || ""}</td><td>${a.isolation || ""}</td></tr>`);
    document.querySelector("#attempts tbody").innerHTML = rows.join("");
  }

  connect();
})();
