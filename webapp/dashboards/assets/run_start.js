// The start-a-run form: preset buttons fill in their fields, the language-model settings show only when
// the policy is a language model, the "RL against static" button fills in a study's arms, and a search box
// filters the competitions' ticks by name or slug (ticked ones stay in sight). Without this script every
// field is shown and nothing is lost.
(function () {
  "use strict";
  const form = document.getElementById("run-form");
  const policy = document.getElementById("id_policy");
  const lmSettings = document.getElementById("lm-settings");
  const presets = JSON.parse(document.getElementById("preset-data").textContent);

  function showLmSettings() {  // a setting with an error stays in sight whatever the policy
    lmSettings.hidden = policy.value !== "lm" && !lmSettings.querySelector(".error");
  }

  function setField(name, value) {
    const input = form.elements.namedItem(name);
    if (!input) return;
    if (input.type === "checkbox") input.checked = Boolean(value);
    else input.value = String(value);
  }

  function applyPreset(key) {
    const preset = presets.find((p) => p.key === key);
    Object.entries(preset.fields).forEach(([name, value]) => setField(name, value));
    document.getElementById("preset-description").textContent = preset.description;
    showLmSettings();
  }

  function filterCompetitions() {
    const search = document.getElementById("competition-search");
    const words = search.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    const options = [...document.querySelectorAll("#id_competitions input[type=checkbox]")];
    let shown = 0;
    options.forEach((box) => {
      const text = box.closest("label").textContent.toLowerCase();
      const match = box.checked || words.every((word) => text.includes(word));
      box.closest("#id_competitions > div").hidden = !match;
      shown += match;
    });
    const ticked = options.filter((box) => box.checked).length;
    document.getElementById("competition-count").textContent =
      `${ticked} ticked · ${shown} of ${options.length} shown`;
  }

  function setUpCompetitionSearch() {
    const search = document.getElementById("competition-search");
    if (!search) return;
    search.hidden = false;
    search.addEventListener("input", filterCompetitions);
    search.addEventListener("keydown", (event) => {  // Enter in the search box filters; it does not submit
      if (event.key === "Enter") event.preventDefault();
    });
    document.getElementById("id_competitions").addEventListener("change", filterCompetitions);
    filterCompetitions();
  }

  // "RL against static": two arms, the policy frozen and the same run learning, on at least 2 seeds.
  function fillRlAgainstStatic(button) {
    document.getElementById("id_study_arms").value = button.dataset.arms;
    const seeds = document.getElementById("id_study_seeds");
    if (Number(seeds.value || 1) < 2) seeds.value = "2";
  }

  const rlAgainstStatic = document.getElementById("rl-against-static");
  if (rlAgainstStatic) rlAgainstStatic.addEventListener("click", () => fillRlAgainstStatic(rlAgainstStatic));
  document.querySelectorAll("button.preset").forEach((button) => {
    button.addEventListener("click", () => applyPreset(button.dataset.preset));
  });
  policy.addEventListener("change", showLmSettings);
  showLmSettings();
  setUpCompetitionSearch();
})();
