// gpucost web pages: small progressive enhancements; every page works without JavaScript.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  // Forms: leave empty and default-valued fields out of the URL, so a shared link carries only
  // what was chosen (the server treats both the same).
  for (const form of document.querySelectorAll("form[method='get']")) {
    form.addEventListener("submit", () => {
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
