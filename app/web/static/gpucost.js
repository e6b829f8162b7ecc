// gpucost web pages: small progressive enhancements; every page works without JavaScript.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  // Forms: leave empty and default-valued fields out of the URL, so a shared link carries only
  // what was chosen (the server treats both the same).
  for (const form of document.querySelectorAll("form[method='get']")) {
    form.addEventListener("submit", (event) => {
      // The ranking form without a workload: say what to pick instead of reloading the page.
      if (form.id === "rank-form") {
        const given = [...form.querySelectorAll(
          "fieldset.workload input[name], fieldset.workload select[name]")]
          .some((el) => el.value.trim() !== "");
        if (!given) {
          event.preventDefault();
          let box = document.getElementById("pick-workload");
          if (!box) {
            box = document.createElement("div");
            box.id = "pick-workload";
            box.className = "errors";
            box.setAttribute("role", "alert");
            box.textContent = "No workload given: pick a preset (e.g. Llama 3 8B QLoRA or " +
              "ResNet-50), or describe the model under \u201cModel shape\u201d (params and shape).";
            form.prepend(box);
          }
          box.scrollIntoView({ block: "nearest" });
          const preset = document.getElementById("f-preset");
          if (preset) preset.focus();
          return;
        }
      }
      for (const el of form.querySelectorAll("input[name], select[name]")) {
        const value = el.value.trim();
        if (value === "" || (el.dataset.default && value === el.dataset.default)) {
          el.disabled = true;
        }
      }
    });
  }
  // Re-enable them when the page comes back from the back/forward cache.
  window.addEventListener("pageshow", () => {
    for (const el of document.querySelectorAll("input:disabled, select:disabled")) {
      el.disabled = false;
    }
  });

  // Preset picker: show the chosen preset's values as the placeholders of empty fields, and
  // clear the workload overrides typed for the previous preset.
  const presetSelect = document.querySelector("#rank-form #f-preset");
  const presetData = document.getElementById("preset-values");
  if (presetSelect && presetData) {
    const presets = JSON.parse(presetData.textContent);
    presetSelect.addEventListener("change", () => {
      const values = presets[presetSelect.value] || {};
      for (const el of document.querySelectorAll(
        "#rank-form fieldset.workload input[name], #rank-form fieldset.workload select[name]")) {
        if (el === presetSelect) continue;
        const shown = values[el.name];
        if (el.tagName === "SELECT") {
          const first = el.querySelector("option[data-preset-option]");
          if (first) first.textContent = shown ? `${shown} (preset)` : "default";
          el.value = "";
        } else {
          el.value = "";
          el.placeholder = shown || el.title || "";
        }
      }
    });
  }

  // config.json: the API reads it into the model-shape fields, in one step.
  const hfButton = document.getElementById("hf-fill");
  if (hfButton) {
    hfButton.addEventListener("click", async () => {
      const out = document.getElementById("hf-result");
      const text = document.getElementById("hf-config").value;
      let body;
      try {
        body = JSON.parse(text);
      } catch (err) {
        out.textContent = `Not JSON: ${err.message}`;
        return;
      }
      const r = await fetch("/v1/workloads/from-hf-config", {
        method: "POST", headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      const answer = await r.json();
      if (!r.ok) {
        const keys = (answer.extra || []).map((e) => e.key).join(", ");
        out.textContent = `${answer.detail}${keys ? ` (${keys})` : ""}`;
        return;
      }
      const filled = [];
      for (const [name, value] of Object.entries(answer.fields)) {
        const el = document.getElementById(`f-${name}`);
        if (!el) continue;
        el.value = String(value);
        filled.push(`${name} ${value}`);
      }
      const adv = document.querySelector("#rank-form fieldset.workload details.advanced");
      if (adv) adv.open = true;
      const maxPos = answer.fields.max_positions;
      out.textContent = `Filled ${filled.join(", ")}` +
        (maxPos ? `; the model takes up to ${maxPos} tokens per sequence` : "") +
        `. ${answer.notes.join("; ")}. Now give the sequence length and samples per epoch.`;
    });
  }

  // Chart: name the hovered or focused point, and highlight its table row (and back).
  const label = document.getElementById("chart-label");
  const points = document.querySelectorAll("svg.scatter circle.pt");
  const rowFor = (id) => document.querySelector(`#results-table tr[data-offer-id="${id}"]`);
  const pointFor = (id) => document.querySelector(`svg.scatter circle.pt[data-offer-id="${id}"]`);
  const show = (pt, on) => {
    pt.classList.toggle("highlight", on);
    const row = rowFor(pt.dataset.offerId);
    if (row) row.classList.toggle("highlight", on);
    if (on && label) label.textContent = pt.querySelector("title").textContent;
  };
  for (const pt of points) {
    pt.addEventListener("mouseenter", () => show(pt, true));
    pt.addEventListener("mouseleave", () => show(pt, false));
    pt.addEventListener("touchstart", () => show(pt, true), { passive: true });
  }
  for (const row of document.querySelectorAll("#results-table tbody tr[data-offer-id]")) {
    const pt = pointFor(row.dataset.offerId);
    if (!pt) continue;
    row.addEventListener("mouseenter", () => show(pt, true));
    row.addEventListener("mouseleave", () => show(pt, false));
  }
});
