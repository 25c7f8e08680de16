// The live run page: one websocket, a snapshot on connect, then incremental events ordered by `seq`.
// Events with seq <= the snapshot's are already in it and are skipped. A gap in seq asks the server for a
// fresh snapshot, once: until it arrives events are dropped, since it includes every one sent before it
// (a reconnect brings its own snapshot). So nothing is ever double-counted.
// The snapshot's chart history is downsampled by the server; its `stats` (finished, valid, stage counts)
// and `best_steps` (every improvement of the best score) are exact and are kept up to date from events.
// Once the page holds too many points it asks for a fresh (re-downsampled) snapshot. Redraws are
// throttled, so a fast run costs a few redraws a second. The page judges nothing itself: the stage names
// (and their words) come with the snapshot (rl_core.instrument), whether an attempt improved the best score
// with its event (`improves_best`, by rl_core.metrics.is_better), the metric and whether the run is still
// active with the run. The summary (status, progress against the budget with the time left at the pace so
// far, duration, best score linked to its attempt) follows the events; the page's words about the metric,
// the reward and the settings are the server's (webapp/dashboards/run_page.py). The main charts are drawn
// always, the folded diagnostics only while open. The table shows the newest 50 live and pages older
// attempts from /api/runs/<id>/attempts/. plotly.js is deferred: the socket opens (and the server builds
// the snapshot) while the browser is still evaluating it; drawing waits for it.
(function () {
  const runId = JSON.parse(document.getElementById("run-id").textContent);
  const MAX_POINTS = 4000, DRAW_EVERY_MS = 400, PAGE_SIZE = 50;
  const state = { seq: 0, attempts: new Map(), metrics: new Map(), total: 0, run: null, stages: [],
    stats: { finished: 0, valid: 0, stages: {} }, bestSteps: [] };
  const $ = (id) => document.getElementById(id);
  let socket = null, retryMs = 500, drawTimer = null, lastDraw = 0, page = 1, awaitingSnapshot = true;
  window.practicum = { state, charts: 0 };

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}/ws/runs/${runId}/`);
    socket.onopen = () => { retryMs = 500; awaitingSnapshot = true; $("live").textContent = "live"; };
    socket.onclose = (event) => {
      $("live").textContent = event.code === 4403 ? "not allowed" : "reconnecting…";
      if (event.code !== 4403) setTimeout(connect, retryMs = Math.min(retryMs * 2, 8000));
    };
    socket.onmessage = (event) => receive(JSON.parse(event.data));
  }

  function resync() {
    if (awaitingSnapshot) return;  // one is on its way
    awaitingSnapshot = true;
    socket.send(JSON.stringify({ type: "resync" }));
  }

  function receive(message) {
    if (message.type === "snapshot") return applySnapshot(message);
    if (awaitingSnapshot || message.seq <= state.seq) return;  // included in the snapshot (on its way)
    if (message.seq > state.seq + 1) return resync();
    state.seq = message.seq;
    if (message.type === "attempt") applyAttempt(message.attempt, message.best_score, message.improves_best);
    else if (message.type === "metrics") state.metrics.set(message.step.version, message.step);
    else if (message.type === "run") state.run = message.run;
    if (state.attempts.size > MAX_POINTS) return resync();
    scheduleDraw();
  }

  function applyAttempt(a, bestScore, improvesBest) {
    const before = state.attempts.get(a.id);
    state.attempts.set(a.id, a);
    state.total = Math.max(state.total, a.number);
    if (!a.finished_at || (before && before.finished_at)) return;
    scheduleArrival(ARRIVAL_EVERY_MS);
    if (a.status !== "lost" && a.prompt_kind !== "final") {
      state.stats.finished += 1;
      state.stats.valid += a.valid ? 1 : 0;
      a.stages.forEach((s) => { state.stats.stages[s] = (state.stats.stages[s] || 0) + 1; });
    }
    if (improvesBest) state.bestSteps.push({ number: a.number, score: a.score, finished_at: a.finished_at });
    if (bestScore !== undefined && state.run) state.run.best_score = bestScore;
  }

  function applySnapshot(snapshot) {
    awaitingSnapshot = false;
    Object.assign(state, { seq: snapshot.seq, run: snapshot.run, total: snapshot.attempts_total, stages: snapshot.stages || [], stageLabels: snapshot.stage_labels || {},
      stats: snapshot.stats, bestSteps: snapshot.best_steps,
      attempts: new Map(snapshot.attempts.map((a) => [a.id, a])),
      metrics: new Map(snapshot.metrics.map((m) => [m.version, m])) });
    scheduleDraw();
    scheduleArrival(0);
  }

  const plotlyReady = new Promise((resolve) => (window.Plotly ? resolve() : document.addEventListener("DOMContentLoaded", resolve)));

  function scheduleDraw() {
    if (drawTimer) return;
    const wait = Math.max(0, DRAW_EVERY_MS - (Date.now() - lastDraw));
    drawTimer = setTimeout(() => plotlyReady.then(() => requestAnimationFrame(() => { drawTimer = null; lastDraw = Date.now(); draw(); })), wait);
  }

  // The legend sits at the bottom of the figure, and margins grow to fit it and the x-axis title, so the two
  // never overlap (a legend placed against the plot area covered the axis title).
  const LEGEND = { orientation: "h", yref: "container", y: 0, yanchor: "bottom" };
  const layout = (title, x, y) => ({ title: { text: title, font: { size: 14 } }, margin: { l: 50, r: 10, t: 36, b: 40 },
    xaxis: { title: { text: x }, automargin: true }, yaxis: { title: { text: y } }, legend: LEGEND });
  const config = { displayModeBar: false, responsive: true };
  const react = (id, traces, lay) => Plotly.react(id, traces, lay, config);
  // Markers show a lone update; on long histories they cost far more to draw than they tell.
  const byVersion = (steps, key) => ({ x: steps.map((s) => s.version), y: steps.map((s) => s[key]),
    mode: steps.length > 100 ? "lines" : "lines+markers", name: key });

  // Legends and axes in words: the learner's metric keys as a reader would name them.
  const NAMES = {
    "losses/policy": "policy loss", "losses/entropy": "entropy term", "losses/kl": "KL penalty",
    "charts/entropy": "policy entropy", "charts/staleness_mean": "mean staleness", "charts/staleness_max": "largest staleness",
    "charts/duration_weight_max": "largest duration weight", "charts/tokens_per_s": "tokens per second",
    "sampler/generation_batch_mean": "programs per generation call", "sampler/queue_depth": "programs queued",
    "sampler/dropped_stale": "dropped as stale", "sampler/generation_s_mean": "generation time (mean)",
    "charts/duration_mean_s": "attempt Δt (mean)",
  };
  const named = (trace) => ({ ...trace, name: NAMES[trace.name] || trace.name });
  // An empty chart says what it waits for instead of showing a bare grid.
  const waiting = (lay, empty, what) => (empty ? { ...lay, annotations: [{ text: `waiting for the ${what}…`, showarrow: false,
    xref: "paper", yref: "paper", x: 0.5, y: 0.5, font: { size: 14, color: "#667085" } }] } : lay);
  const FIRST_ATTEMPT = "first finished attempt", FIRST_UPDATE = "first policy update";

  function draw() {
    const all = [...state.attempts.values()].sort((a, b) => a.number - b.number);
    // A validation run's final gradings (on the hidden answers) are the summary's, not the charts'.
    const done = all.filter((a) => a.finished_at && a.status !== "lost" && a.prompt_kind !== "final");
    drawMain(done);
    if ($("diagnostics").open) drawDiagnostics(done);
    drawWarmStart();
    window.practicum.charts += 1;
    drawStats();
    if (page === 1) drawTable(all.slice(-PAGE_SIZE).reverse());
  }

  // The charts that matter, each on its own axis: score (in the metric's units and direction), reward,
  // valid rate on 0–1, Δt, the stage funnel, and the best score against wall-clock.
  function drawMain(done) {
    const empty = done.length === 0;
    const scored = done.filter((a) => a.valid && a.score !== null);
    const best = bestCurve(done);
    const metric = metricTitle();
    react("chart-score", [
      { x: scored.map((a) => a.number), y: scored.map((a) => a.score), mode: "markers", name: "valid attempt's score", marker: { size: 5 } },
      { x: best.map((b) => b.number), y: best.map((b) => b.score), mode: "lines", name: "best so far", line: { shape: "hv" } },
    ], waiting(layout(`Score on the ${gradedOn()}`, "attempt", metric), empty, FIRST_ATTEMPT));
    react("chart-reward", [
      { x: done.map((a) => a.number), y: done.map((a) => a.reward), mode: "markers", name: "reward", marker: { size: 5 } },
      { x: done.map((a) => a.number), y: rolling(done.map((a) => a.reward), 20), mode: "lines", name: "mean of the last 20" },
    ], waiting(layout("Reward per attempt (see “Reward” above)", "attempt", "reward"), empty, FIRST_ATTEMPT));
    react("chart-valid", [{ x: done.map((a) => a.number), y: rolling(done.map((a) => (a.valid ? 1 : 0)), 20), mode: "lines", name: "valid rate" }],
      waiting({ ...layout("Valid-submission rate (last 20 attempts)", "attempt", "share valid"), yaxis: { title: { text: "share valid" }, range: [0, 1.02] } },
        empty, FIRST_ATTEMPT));
    react("chart-duration", [{ x: done.map((a) => a.number), y: done.map((a) => a.duration_s), mode: "markers", name: "Δt", marker: { size: 5 } }],
      waiting({ ...layout("Execution time per attempt (Δt)", "attempt", ""), yaxis: { type: "log", title: { text: "seconds (log)" } } }, empty, FIRST_ATTEMPT));
    const reached = state.stages.map((s) => state.stats.stages[s] || 0);
    const stageName = (s) => (state.stageLabels || {})[s] || s;
    react("chart-funnel", [{ type: "bar", orientation: "h", y: state.stages.map(stageName), x: reached, text: reached, textposition: "auto", name: "attempts" }],
      waiting({ ...layout(`Progress stages reached (of ${state.stats.finished} finished)`, "attempts", ""), margin: { l: 130, r: 10, t: 36, b: 40 },
        yaxis: { autorange: "reversed", automargin: true } }, empty, FIRST_ATTEMPT));
    const t0 = startTime(done);
    const wall = (a) => (Date.parse(a.finished_at) - t0) / 1000;
    react("chart-best-time", [{ x: best.map(wall), y: best.map((b) => b.score), mode: "lines+markers", name: "best so far", line: { shape: "hv" } }],
      waiting(layout("Best score against wall-clock", "seconds since the run started", metric), !best.length, "first valid submission"));
  }

  // Folded diagnostics, drawn only while open (a chart drawn folded would have no width).
  function drawDiagnostics(done) {
    const steps = [...state.metrics.values()].sort((a, b) => a.version - b.version);
    const noSteps = steps.length === 0;
    const byKeys = (keys) => keys.map((k) => named(byVersion(steps, k)));
    react("chart-learner", byKeys(["losses/policy", "losses/entropy", "losses/kl", "charts/entropy"]),
      waiting(layout("Learner: loss, entropy, KL", "policy version", ""), noSteps, FIRST_UPDATE));
    react("chart-staleness", byKeys(["charts/staleness_mean", "charts/staleness_max"]),
      waiting(layout("Staleness: updates between drawing and learning", "policy version", "versions"), noSteps, FIRST_UPDATE));
    react("chart-weights", byKeys(["charts/duration_weight_max"]),
      waiting(layout("Duration weights (largest in each update)", "policy version", "weight"), noSteps, FIRST_UPDATE));
    const groups = groupBy(done, (a) => a.family || a.prompt_kind);
    react("chart-scatter", Object.entries(groups).map(([name, items]) => ({
      x: items.map((a) => a.duration_s), y: items.map((a) => a.reward), mode: "markers", name, marker: { size: 6 },
    })), waiting({ ...layout("Δt against reward, by program family", "", "reward"), xaxis: { type: "log", title: { text: "Δt (s, log)" }, automargin: true } },
      done.length === 0, FIRST_ATTEMPT));
    if (!$("chart-tokens")) return;  // the generation charts are a language model's only
    react("chart-tokens", byKeys(["charts/tokens_per_s"]), waiting(layout("Generation speed", "policy version", "tokens / s"), noSteps, FIRST_UPDATE));
    react("chart-sampler", byKeys(["sampler/generation_batch_mean", "sampler/queue_depth", "sampler/dropped_stale"]),
      waiting(layout("Sampler: per generation call, queued, dropped as stale", "policy version", "programs"), noSteps, FIRST_UPDATE));
    react("chart-generation", byKeys(["sampler/generation_s_mean", "charts/duration_mean_s"]),
      waiting(layout("Generation time beside Δt", "policy version", "seconds"), noSteps, FIRST_UPDATE));
  }

  const gradedOn = () => ((state.run || {}).reward_source === "validation" ? "validation split" : "hidden answers");

  function metricTitle() {
    const run = state.run || {};
    if (!run.metric) return "score";
    return `${run.metric} (${run.higher_is_better ? "higher" : "lower"} is better)`;
  }

  // The warm-start phase (fine-tuning before RL): a progress bar over its steps and the loss of each step.
  function drawWarmStart() {
    const progress = (state.run && state.run.warm_start) || {};
    if (!progress.status) return;
    $("warm-start").hidden = false;
    const losses = progress.losses || [];
    $("warm-start-bar").max = progress.total || 1;
    $("warm-start-bar").value = progress.status === "done" ? progress.total || 1 : progress.step || 0;
    $("warm-start-label").textContent = progress.status === "done"
      ? `done in ${fmt(progress.wall_s, 0)} s: ${progress.demonstrations} demonstrations, ${progress.total} steps, loss ${fmt(losses[0], 3)} → ${fmt(losses[losses.length - 1], 3)}; stored as warm start "${progress.adapter}"`
      : `${progress.phase}${progress.total ? `: step ${progress.step} of ${progress.total}` : ""}${progress.message ? ` · ${progress.message}` : ""}`;
    react("chart-warm-start", [{ x: losses.map((_, i) => i + 1), y: losses, mode: losses.length > 100 ? "lines" : "lines+markers", name: "loss" }],
      layout("Demonstration loss per step", "step", "token NLL (nats)"));
  }

  function startTime(done) {
    if (state.run && state.run.started_at) return Date.parse(state.run.started_at);
    return done.length ? Math.min(...done.map((a) => Date.parse(a.started_at))) : 0;
  }

  // The exact best-score steps, carried to the newest finished attempt so the line reaches the present.
  function bestCurve(done) {
    const steps = state.bestSteps.slice();
    const last = done[done.length - 1];
    if (steps.length && last && last.number > steps[steps.length - 1].number) {
      steps.push({ ...steps[steps.length - 1], number: last.number, finished_at: last.finished_at });
    }
    return steps;
  }

  // Launch share against completion share: webapp/runs/arrival.py computes it, this only draws it. Fetched
  // when a snapshot arrives and, while attempts finish, at most once every ARRIVAL_EVERY_MS.
  const ARRIVAL_EVERY_MS = 5000;
  const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  let arrivalTimer = null, arrivalAsked = 0;

  function scheduleArrival(waitMs) {
    if (arrivalTimer) return;
    // A failed fetch is left to the next finished attempt (or reconnect) to retry.
    arrivalTimer = setTimeout(() => { arrivalTimer = null; loadArrival(++arrivalAsked).catch(() => {}); }, waitMs);
  }

  async function loadArrival(asked) {
    const response = await fetch(`/runs/${runId}/arrival.json`, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    if (!response.ok) return;
    const data = await response.json();
    await plotlyReady;
    if (asked === arrivalAsked) drawArrival(data);  // else a newer answer is on its way
  }

  function drawArrival(data) {
    const mid = data.windows.map((w) => (w.start_s + w.end_s) / 2);
    const share = (w, key, g) => (Object.keys(w[key]).length ? w[key][g] || 0 : null);  // null: none in the slice
    const traces = data.groups.flatMap((g, i) => {
      const color = PALETTE[i % PALETTE.length];
      return [
        { x: mid, y: data.windows.map((w) => share(w, "completion_share", g)), mode: "lines+markers", name: g, legendgroup: g, line: { color } },
        { x: mid, y: data.windows.map((w) => share(w, "launch_share", g)), mode: "lines+markers", name: `${g} launched`, legendgroup: g, showlegend: false, line: { color, dash: "dash" }, marker: { symbol: "circle-open" } },
      ];
    });
    const by = data.grouping === "family" ? "program family" : "Δt bucket";
    react("chart-arrival", traces, { ...layout(`By ${by}, fastest first: dashed launched, solid finished`, "seconds since the first launch", "share"),
      yaxis: { title: { text: "share" }, range: [0, 1] } });
    $("arrival-caption").textContent = `The run's wall-clock time, from its first launch to its newest event, cut into ${data.windows.length} equal slices: per slice, each group's share of the attempts launched in it (dashed) against its share of those that finished in it (solid). ${arrivalInFlight(data)}`;
    $("arrival-summary").textContent = arrivalSummary(data.summary);
    window.practicum.arrivalDraws = (window.practicum.arrivalDraws || 0) + 1;
  }

  const arrivalInFlight = (data) => (data.grouping === "family"
    ? `Attempts still in flight (${data.in_flight}) count in the launch share by their family.`
    : `Attempts still in flight (${data.in_flight_left_out}) are left out: their Δt is not known yet.`);

  function arrivalSummary(s) {
    const reading = s.reading[0].toUpperCase() + s.reading.slice(1);
    if (s.verdict === "too_few") return `${reading}: ${s.finished} finished attempts, at least ${s.min_finished} needed.`;
    return `${reading}: total variation distance ${fmt(s.distance, 2)} between launch and completion shares `
      + `(chance level ≈ ${fmt(s.chance, 2)}), over ${s.windows} slices, ${s.launched} launched and ${s.finished} finished attempts.`;
  }

  const rolling = (xs, n) => xs.map((_, i) => { const w = xs.slice(Math.max(0, i - n + 1), i + 1); return w.reduce((s, v) => s + v, 0) / w.length; });
  const groupBy = (xs, key) => xs.reduce((g, x) => ((g[key(x)] = g[key(x)] || []).push(x), g), {});
  const fmt = (v, d = 4) => (v === null || v === undefined ? "–" : Number(v).toFixed(d));
  const esc = (v) => String(v ?? "").replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

  function drawStats() {
    const run = state.run || {};
    $("stat-status").textContent = run.status || "";
    // Attempts past the budget are the final policy's evaluation or a validation run's final grading.
    const budget = (run.config && run.config.attempts) || Infinity;
    $("stat-attempts").textContent = Math.min(state.total, budget);
    $("stat-after").textContent = state.total > budget ? ` (+${state.total - budget} after training)` : "";
    if ($("stat-progress")) $("stat-progress").value = Math.min(state.total, $("stat-progress").max);
    const last = state.bestSteps[state.bestSteps.length - 1];
    $("stat-best").textContent = fmtScore(run.best_score);
    if (last) $("stat-best-link").href = `/runs/${runId}/attempts/${last.number}/`;
    $("stat-valid").textContent = state.stats.finished ? fmt(state.stats.valid / state.stats.finished, 2) : "–";
    const learned = Math.max(run.policy_version ?? 0, ...[...state.metrics.keys()], 0);  // metrics come first
    $("stat-version").textContent = learned;
    if (run.active === false) $("live").textContent = run.status;  // no more events will come
    if ($("cancel")) $("cancel").form.hidden = run.active === false;  // drawn while the run was active
    drawClock();
  }

  // Duration (start to end, or to now while active) and, while active, the time left at the pace so far.
  function drawClock() {
    const run = state.run || {};
    if (!run.started_at) return;
    const end = run.finished_at ? Date.parse(run.finished_at) : Date.now();
    const elapsed = Math.max(0, (end - Date.parse(run.started_at)) / 1000);
    $("stat-duration").textContent = duration(elapsed);
    const budget = run.config && run.config.attempts, finished = state.stats.finished;
    const left = budget ? budget - finished : 0;
    $("stat-eta").textContent = run.active && finished && left > 0 ? `about ${duration((elapsed / finished) * left)} left` : "";
  }

  const duration = (s) => (s < 60 ? `${Math.round(s)} s` : s < 3600 ? `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`
    : `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`);
  // Scores as rl_core.metrics.format_score writes them: five significant digits, trailing zeros kept.
  function fmtScore(v) {
    if (v === null || v === undefined) return "–";
    const x = Number(v);
    if (!Number.isFinite(x)) return String(x);
    const magnitude = x ? Math.floor(Math.log10(Math.abs(x))) : 0;
    return x.toFixed(Math.min(Math.max(4 - magnitude, 0), 15));
  }

  function drawTable(rows) {
    const pages = Math.max(1, Math.ceil(state.total / PAGE_SIZE));
    $("attempts-total").textContent = `(${state.total})`;
    $("page-label").textContent = page === 1 ? `page 1 of ${pages} (live)` : `page ${page} of ${pages}`;
    document.querySelector("#attempts tbody").innerHTML = rows.map((a) => `<tr>
      <td><a href="/runs/${runId}/attempts/${a.number}/">${a.number}</a></td><td>${esc(a.status)}</td><td>${a.stage_count}</td>
      <td>${fmtScore(a.score)}</td><td>${fmt(a.reward, 3)}</td><td>${fmt(a.duration_s, 2)}</td><td>${a.policy_version}</td>
      <td>${esc(a.prompt_kind)}</td><td>${a.answers === "validation" ? "validation split" : "hidden answers"}</td><td>${esc(a.family)}</td><td>${esc(a.isolation)}</td>
      <td><a href="/runs/${runId}/attempts/${a.number}/bundle.zip" title="download this attempt">zip</a></td></tr>`).join("");
  }

  async function showPage(n) {
    page = Math.max(1, Math.min(n, Math.ceil(state.total / PAGE_SIZE) || 1));
    if (page === 1) return draw();
    const response = await fetch(`/api/runs/${runId}/attempts/?ordering=-number&page=${page}&page_size=${PAGE_SIZE}`,
      { headers: { Accept: "application/json" }, credentials: "same-origin" });
    if (response.ok) drawTable((await response.json()).results);
  }

  $("page-newer").addEventListener("click", () => showPage(page - 1));
  $("page-older").addEventListener("click", () => showPage(page + 1));
  const cancelForm = document.getElementById("cancel-form");  // stopping a run is final: ask first
  if (cancelForm) cancelForm.addEventListener("submit", (event) => {
    if (!window.confirm(cancelForm.dataset.confirm)) event.preventDefault();
  });
  // Folded charts draw when opened; the launch-share chart, drawn while folded, takes the width it now has.
  $("diagnostics").addEventListener("toggle", () => {
    if (!$("diagnostics").open) return;
    scheduleDraw();
    plotlyReady.then(() => { if ($("chart-arrival").data) Plotly.Plots.resize("chart-arrival"); });
  });
  setInterval(() => { if (state.run && state.run.active) drawClock(); }, 1000);
  connect();
})();
