// gpucost web pages: small progressive enhancements; every page works without JavaScript.
"use strict";

document.documentElement.classList.remove("no-js");

document.addEventListener("DOMContentLoaded", () => {
  const rankForm = document.getElementById("rank-form");
  const workloadFields = () => rankForm.querySelectorAll(
    "fieldset.workload input[name]:not([type=radio]), fieldset.workload select[name]");

  // Forms: leave empty fields, and fields still at their default or preset value, out of the
  // URL, so a shared link carries only what was chosen (the server treats both the same).
  for (const form of document.querySelectorAll("form[method='get']")) {
    form.addEventListener("submit", (event) => {
      // The ranking form without a workload: say what to pick instead of reloading the page.
      if (form === rankForm) {
        const preset = form.querySelector("input[name=preset]:checked");
        const given = (preset && preset.value !== "") ||
          [...workloadFields()].some((el) => el.value.trim() !== "");
        if (!given) {
          event.preventDefault();
          let box = document.getElementById("pick-workload");
          if (!box) {
            box = document.createElement("div");
            box.id = "pick-workload";
            box.className = "errors";
            box.setAttribute("role", "alert");
            box.textContent = form.dataset.noWorkload || "No workload given: pick a preset " +
              "(e.g. Llama 3 8B QLoRA or ResNet-50), or describe the model under " +
              "\u201cModel shape\u201d (params and shape).";
            form.prepend(box);
          }
          box.scrollIntoView({ block: "nearest" });
          const search = document.getElementById("preset-search");
          if (search) search.focus();
          return;
        }
        const base = document.getElementById("f-base");
        if (base) base.disabled = true;
      }
      for (const el of form.querySelectorAll("input[name], select[name]")) {
        if (el.type === "radio" || el.type === "hidden") continue;
        const value = el.value.trim();
        if (value === "" || (el.dataset.default !== undefined && value === el.dataset.default)) {
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

  if (rankForm) enhanceRankForm(rankForm, workloadFields);
  enhanceChart();
});

function enhanceRankForm(form, workloadFields) {
  // A field whose value differs from the preset's is marked as changed.
  const mark = (el) => {
    const field = el.closest(".field");
    if (field) field.classList.toggle("changed", !!el.dataset.default && el.value !== el.dataset.default);
  };
  for (const el of workloadFields()) {
    el.addEventListener("input", () => mark(el));
    el.addEventListener("change", () => mark(el));
  }

  // Preset picker: the chosen preset's values become the fields' values (and defaults).
  const presetData = document.getElementById("preset-values");
  const presets = presetData ? JSON.parse(presetData.textContent) : {};
  const applyPreset = (slug) => {
    const values = presets[slug] || {};
    for (const el of workloadFields()) {
      const shown = values[el.name] || "";
      el.value = shown;
      el.dataset.default = shown;
      mark(el);
    }
  };
  for (const radio of form.querySelectorAll("input[name=preset]")) {
    radio.addEventListener("change", () => applyPreset(radio.value));
  }

  // Preset search: every word must start a word of the preset's name or slug.
  const search = document.getElementById("preset-search");
  if (search) {
    const list = document.getElementById("picker-list");
    const none = list.querySelector(".pick-none");
    const words = (text) => text.toLowerCase().split(/[^a-z0-9.\u4e00-\u9fff]+/).filter(Boolean);
    search.addEventListener("input", () => {
      const wanted = words(search.value);
      let shown = 0;
      for (const group of list.querySelectorAll(".pick-group")) {
        let any = false;
        for (const item of group.querySelectorAll(".pick")) {
          const have = words(item.dataset.search || item.textContent);
          const hit = wanted.every((w) => have.some((h) => h.startsWith(w) ||
            h.replace(/\./g, "").startsWith(w)));
          item.hidden = !hit;
          any = any || hit;
          if (hit) shown += 1;
        }
        group.hidden = !any;
      }
      const custom = list.querySelector(".pick-custom");
      if (custom) custom.hidden = wanted.length > 0;
      if (none) none.hidden = shown > 0;
    });
    search.addEventListener("keydown", (event) => {
      if (event.key !== "Enter") return;
      event.preventDefault();
      const first = list.querySelector(".pick:not([hidden]) input");
      if (first) { first.checked = true; first.dispatchEvent(new Event("change")); first.focus(); }
    });
    const checked = list.querySelector("input:checked");
    if (checked && checked.value) checked.closest(".pick").scrollIntoView({ block: "nearest" });
  }

  // GPU chips: add or remove a family in the comma-separated GPU filter.
  const gpu = document.getElementById("f-gpu");
  const norm = (s) => s.toLowerCase().replace(/\s+/g, "");
  for (const chip of form.querySelectorAll(".chip[data-gpu]")) {
    chip.addEventListener("click", () => {
      const parts = gpu.value.split(",").map((s) => s.trim()).filter(Boolean);
      const at = parts.findIndex((p) => norm(p) === norm(chip.dataset.gpu));
      if (at >= 0) parts.splice(at, 1); else parts.push(chip.dataset.gpu);
      gpu.value = parts.join(", ");
      chip.setAttribute("aria-pressed", at >= 0 ? "false" : "true");
    });
  }
  const count = document.getElementById("f-gpu_count");
  for (const chip of form.querySelectorAll(".chip[data-count]")) {
    chip.addEventListener("click", () => {
      const on = count.value !== chip.dataset.count;
      count.value = on ? chip.dataset.count : "";
      for (const c of form.querySelectorAll(".chip[data-count]")) {
        c.setAttribute("aria-pressed", on && c === chip ? "true" : "false");
      }
    });
  }

  // config.json: the API reads it into the model-shape fields, in one step (a custom workload).
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
      const custom = form.querySelector("input[name=preset][value='']");
      if (custom && !custom.checked) { custom.checked = true; applyPreset(""); }
      const filled = [];
      for (const [name, value] of Object.entries(answer.fields)) {
        const el = document.getElementById(`f-${name}`);
        if (!el) continue;
        el.value = String(value);
        filled.push(`${name} ${value}`);
      }
      const adv = form.querySelector("fieldset.workload details.advanced");
      if (adv) adv.open = true;
      const maxPos = answer.fields.max_positions;
      out.textContent = `Filled ${filled.join(", ")}` +
        (maxPos ? `; the model takes up to ${maxPos} tokens per sequence` : "") +
        `. ${answer.notes.join("; ")}. Now give the sequence length and samples per epoch.`;
    });
  }
}

function enhanceChart() {
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
}
