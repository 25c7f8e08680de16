// The start-a-run form: preset buttons fill in their fields, and the language-model settings show only when
// the policy is a language model. Without this script every field is shown and nothing is lost.
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

  document.querySelectorAll("button.preset").forEach((button) => {
    button.addEventListener("click", () => applyPreset(button.dataset.preset));
  });
  policy.addEventListener("change", showLmSettings);
  showLmSettings();
})();
