"""Regenerate seed_data/{gpus,benchmarks,offers_public,providers}.csv from ../shared/data.

Run from the repository root: ``python tools/import_shared.py [--shared ../shared]``.
Every output row keeps its source; the only transformations are the ones written here:

* GPU catalog: cells ending in ``?`` lose the ``?`` and their column is listed in
  ``uncertain_fields``; aliases are kept (`` | `` separated).
* Benchmarks: MLPerf time-to-train rows are dropped (times, not rates); throughput is
  normalised to the whole GPU set (per-GPU published figures × gpu_count, stated in notes);
  precision labels are mapped to the API's enum; GPU labels are mapped to catalog names with
  the explicit table below (ambiguous labels stay unmapped).
* Offers: prices published per GPU-hour are multiplied by the GPU count so that
  ``price_per_hour`` is always per instance-hour; the published figure and unit are kept;
  ``price_kind`` says whether a row is a price index (:data:`PRICE_KIND`) or a provider's own
  price kept by hand.
"""

from __future__ import annotations

import argparse
import csv
import re
from pathlib import Path

from scrapers import SCRAPERS

SEEN_ON = "2026-11-29"  # the date these rows were read from the team's shared catalog

# Benchmark GPU label -> catalog canonical name. None: ambiguous, left unmapped.
BENCH_GPU = {
    "H100 80GB SXM5": "H100 SXM 80GB",
    "H100 80GB PCIe": "H100 PCIe 80GB",
    "H100 96GB HBM2e SXM (500 W limit)": "H100 SXM 96GB HBM2e (500 W)",
    "H200 141GB SXM": "H200 SXM 141GB",
    "GH200 96GB": "GH200 96GB",
    "A100 80GB SXM4": "A100 SXM4 80GB",
    "A100 80GB PCIe": "A100 PCIe 80GB",
    "A100 40GB SXM4": "A100 SXM4 40GB",
    "A100 40GB PCIe": "A100 PCIe 40GB",
    "A100 (variant not stated)": None,
    "A40": "A40",
    "A10": "A10",
    "RTX 6000 Ada": "RTX 6000 Ada",
    "RTX A4000": "RTX A4000",
    "RTX A4500": "RTX A4500",
    "RTX A5000": "RTX A5000",
    "RTX A5500": "RTX A5500",
    "Quadro RTX 8000": "Quadro RTX 8000",
    "Quadro RTX 6000": "Quadro RTX 6000",
    "Quadro RTX 5000": "Quadro RTX 5000",
    "RTX 4090": "GeForce RTX 4090",
    "RTX 3090": "GeForce RTX 3090",
    "RTX 3080": "GeForce RTX 3080 10GB",  # Lambda's RTX 3080 is the 10 GB card (bs config 10GB)
    "RTX 3070": "GeForce RTX 3070",
    "RTX 2080 Ti": "GeForce RTX 2080 Ti",
    "GTX 1080 Ti": "GeForce GTX 1080 Ti",
    "Titan RTX": "TITAN RTX",
    "V100 16GB SXM2": "V100 SXM2 16GB",
    "V100 32GB SXM2": "V100 SXM2 32GB",
    "V100 32GB SXM3": "V100 SXM3 32GB",
    "V100 32GB": None,  # Lambda TF benchmark does not state the form factor
}

#: A row ../shared/docs/benchmarks.md §2.1 calls broken (kept, marked suspect, never used).
BROKEN_ROW = ("lambda_pytorch_v0", "RTX A4000", "1", "WaveGlow", "fp16", "3029")

PRECISION = {
    "fp16": "fp16_amp",
    "fp32": "fp32",
    "tf32": "tf32",
    "fp8+bf16": "fp8",
    "mixed": "fp16_amp",
    "bf16 + NF4 base": "bf16",
}

PUBLISHED_ON = {
    "lambda_pytorch_v0": "2022-07-01",
    "lambda_tensorflow": "2021-04-14",
    "nvidia_dle": "2024-04-04",
}

#: Provider name as the shared data publishes it -> seed slug, in the order providers.csv
#: lists them. The name, homepage and kind of a provider gpucost scrapes are its scraper's
#: (``scrapers.SCRAPERS``, one definition); of the others, :data:`UNSCRAPED`'s.
PUBLISHED_AS = {
    "Lambda": "lambda",
    "AWS": "aws",
    "Google Cloud": "gcp",
    "Azure": "azure",
    "RunPod": "runpod",
    "Vast.ai": "vast",
    "Hyperstack": "hyperstack",
    "Nebius": "nebius",
    "Verda (formerly DataCrunch)": "verda",
    "OCI": "oci",
    "Cudo Compute": "cudo",
    "Paperspace": "paperspace",
    "DigitalOcean": "digitalocean",
    "Vultr": "vultr",
    "恒源云 (gpushare.com)": "gpushare",
    "算家云": "suanjiayun",
    "矩池云 (matpool.com)": "matpool",
    "晨涧云": "chenjianyun",
    "优云智算 (UCloud Compshare)": "compshare",
}

#: slug -> (display name, homepage or None, kind) of the published providers no scraper covers
UNSCRAPED = {
    "paperspace": ("Paperspace", "https://www.paperspace.com", "cloud"),
    "digitalocean": ("DigitalOcean", "https://www.digitalocean.com", "cloud"),
    "gpushare": ("恒源云 (gpushare.com)", "https://gpushare.com", "marketplace"),
    "suanjiayun": ("算家云", None, "marketplace"),
    "matpool": ("矩池云 (matpool.com)", "https://matpool.com", "marketplace"),
    "chenjianyun": ("晨涧云", None, "marketplace"),
    "compshare": ("优云智算 (UCloud Compshare)", None, "marketplace"),
}


def provider_of(slug: str) -> tuple[str, str | None, str]:
    """(display name, homepage or None, kind) of the provider ``slug``: its scraper's where
    gpucost scrapes it, else :data:`UNSCRAPED`'s."""
    scraper = SCRAPERS.get(slug)
    if scraper is None:
        return UNSCRAPED[slug]
    return scraper.name, scraper.homepage_url, scraper.kind


BILLING = {
    "on_demand": "on_demand",
    "spot": "spot",
    "preemptible": "spot",
    "marketplace_on_demand": "on_demand",
    "marketplace_median": "on_demand",
    "on_demand_lowest_listed": "on_demand",
}


#: Published billing labels of aggregated price-index rows (a day's lowest listing of a GPU
#: across platforms, a marketplace median): prices no one rents as listed
#: (app/price_age.py, ``price_index``); every other row is a provider's own price,
#: kept by hand (``hand_kept``).
PRICE_KIND = {"on_demand_lowest_listed": "price_index", "marketplace_median": "price_index"}


def _num(cell: str) -> tuple[str, bool]:
    cell = (cell or "").strip()
    if cell.endswith("?"):
        return cell[:-1].strip(), True
    return cell, False


def import_gpus(shared: Path, out: Path) -> None:
    """Copy the GPU catalog, moving ``?`` marks into ``uncertain_fields``, then append the
    hand-kept rows of ``gpus_manual.csv`` in ``out`` (GPUs the shared catalog lacks)."""
    src = list(csv.DictReader((shared / "data/gpu_specs.csv").open(encoding="utf-8")))
    numeric = [
        "vram_gb",
        "memory_bandwidth_gbs",
        "fp32_tflops",
        "tf32_tensor_tflops",
        "fp16_tensor_tflops",
        "bf16_tensor_tflops",
        "fp8_tensor_tflops",
        "tdp_w",
        "release_year",
        "nvlink_bandwidth_gbs",
        "fp16_fp32acc_tensor_tflops",
        "fp8_fp32acc_tensor_tflops",
    ]
    rename = {
        # datasheet memory sizes are binary: an "80 GB" A100 has 80 GiB (nvidia-smi: 81920 MiB)
        "vram_gb": "vram_gib",
        "tf32_tensor_tflops": "tf32_tflops",
        "fp16_tensor_tflops": "fp16_tflops",
        "bf16_tensor_tflops": "bf16_tflops",
        "fp8_tensor_tflops": "fp8_tflops",
        "fp16_fp32acc_tensor_tflops": "fp16_fp32acc_tflops",
        "fp8_fp32acc_tensor_tflops": "fp8_fp32acc_tflops",
    }
    cols = [
        "canonical_name",
        "vendor",
        "architecture",
        "compute_capability",
        "vram_gib",
        "memory_type",
        "memory_bandwidth_gbs",
        "fp32_tflops",
        "tf32_tflops",
        "fp16_tflops",
        "bf16_tflops",
        "fp8_tflops",
        "fp16_fp32acc_tflops",
        "fp8_fp32acc_tflops",
        "tdp_w",
        "nvlink",
        "nvlink_bandwidth_gbs",
        "form_factor",
        "release_year",
        "market",
        "aliases",
        "uncertain_fields",
        "source",
        "seen_on",
        "notes",
    ]
    with (out / "gpus.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for row in src:
            rec: dict[str, str] = {}
            uncertain: list[str] = []
            for key, value in row.items():
                name = rename.get(key, key)
                if key in numeric:
                    value, unsure = _num(value)
                    if unsure:
                        uncertain.append(name)
                rec[name] = value
            rec["uncertain_fields"] = " | ".join(uncertain)
            rec["seen_on"] = SEEN_ON
            w.writerow({c: rec.get(c, "") for c in cols})
        # hand-kept rows for GPUs the shared catalog lacks (each with its own source and date)
        manual = out / "gpus_manual.csv"
        if manual.is_file():
            shared_names = {r["canonical_name"] for r in src}
            for rec in csv.DictReader(manual.open(encoding="utf-8")):
                if rec["canonical_name"] in shared_names:
                    raise ValueError(
                        f"gpus_manual.csv: {rec['canonical_name']} is in the shared catalog"
                    )
                w.writerow({c: rec.get(c, "") for c in cols})


def _unit(unit: str) -> tuple[str, str]:
    """(normalised unit, scope) from the published unit text."""
    u = unit.lower()
    if "mel frames" in u:
        kind = "mel_frames/s"
    elif "audio samples" in u:
        kind = "audio_samples/s"
    elif u.startswith("images"):
        kind = "images/s"
    elif u.startswith("sequences"):
        kind = "sequences/s"
    elif u.startswith("tokens"):
        kind = "tokens/s"
    elif u.startswith("samples"):
        kind = "samples/s"
    else:
        raise ValueError(f"unknown unit {unit!r}")
    if "total" in u and "not stated" not in u:
        scope = "total"
    elif "per gpu" in u or "per-gpu by consistency" in u:
        scope = "per_gpu"
    elif "not stated" in u:
        scope = "unknown"
    else:
        scope = "total"  # single-GPU rows (torchtune 1x, HF docs): total == per GPU
    return kind, scope


def _method(task: str) -> str:
    t = task.lower()
    if "qlora" in t:
        return "qlora"
    if "lora" in t:
        return "lora"
    if "pre-training" in t:
        return "pretrain"
    return "full"


def _seq_len(task: str) -> str:
    m = re.search(r"(?:seq len|max_seq_length|max seq len)\s*(\d+)", task)
    return m.group(1) if m else ""


def import_benchmarks(shared: Path, out: Path, form_factor: dict[str, str]) -> None:
    """Normalise the measured benchmarks (see module docstring)."""
    src = list(csv.DictReader((shared / "data/benchmarks_measured.csv").open(encoding="utf-8")))
    cols = [
        "gpu",
        "gpu_label",
        "gpu_count",
        "interconnect",
        "workload",
        "task",
        "method",
        "precision",
        "precision_label",
        "batch_size_per_gpu",
        "seq_len",
        "throughput",
        "throughput_scope",
        "throughput_total",
        "throughput_unit",
        "peak_memory_gib",
        "framework",
        "framework_version",
        "suspect",
        "source",
        "source_ref",
        "seen_on",
        "published_on",
        "notes",
    ]
    with (out / "benchmarks.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in src:
            if "time-to-train" in r["throughput_unit"].lower():
                continue
            unit, scope = _unit(r["throughput_unit"])
            count = int(r["gpu_count"])
            published = float(r["throughput"])
            notes = r["notes"]
            if scope == "per_gpu":
                total = published * count
                notes += f"; throughput_total = published per-GPU figure x {count} GPUs"
            else:
                total = published
            gpu = BENCH_GPU[r["gpu"]]
            interconnect = ""
            if count > 1:
                system = r["notes"]
                if "nvlink" in system.lower() or form_factor.get(gpu or "", "") == "SXM":
                    interconnect = "nvlink"
                else:
                    interconnect = "pcie"
            precision_label = r["precision"]
            if precision_label == "bf16":
                # torchtitan: FSDP2 mixed precision (bf16 params for compute, fp32 sharded
                # master weights and reduce); torchtune: pure bf16 weights and optimizer.
                precision = "bf16_amp" if r["source"] == "torchtitan" else "bf16"
            else:
                precision = PRECISION[precision_label]
            version = re.search(r"PyTorch (\d+\.\d+)\.\d", notes)
            suspect = "SUSPECT" in notes
            if (
                r["source"],
                r["gpu"],
                r["gpu_count"],
                r["model"],
                r["precision"],
                r["throughput"],
            ) == BROKEN_ROW:
                suspect = True
                notes += (
                    "; SUSPECT: flagged as looking broken in ../shared/docs/benchmarks.md "
                    "§2.1 caveats (RTX A4000 1-GPU WaveGlow fp16 3,029)"
                )
            w.writerow(
                {
                    "gpu": gpu or "",
                    "gpu_label": r["gpu"],
                    "gpu_count": count,
                    "interconnect": interconnect,
                    "workload": r["model"],
                    "task": r["task"],
                    "method": _method(r["task"]),
                    "precision": precision,
                    "precision_label": precision_label,
                    "batch_size_per_gpu": r["batch_size_per_gpu"],
                    "seq_len": _seq_len(r["task"]),
                    "throughput": r["throughput"],
                    "throughput_scope": scope,
                    "throughput_total": f"{total:g}",
                    "throughput_unit": unit,
                    "peak_memory_gib": r["peak_mem_gb"],
                    "framework": r["framework"],
                    "framework_version": version.group(1) if version else "",
                    "suspect": "true" if suspect else "false",
                    "source": r["source"],
                    "source_ref": r["source_ref"],
                    "seen_on": SEEN_ON,
                    "published_on": PUBLISHED_ON.get(r["source"], ""),
                    "notes": notes,
                }
            )


def import_offers(shared: Path, out: Path) -> None:
    """Normalise the published offers to per-instance prices; write providers too."""
    src = list(csv.DictReader((shared / "data/offers_public.csv").open(encoding="utf-8")))
    cols = [
        "provider",
        "offer_key",
        "instance_type",
        "region",
        "gpu_name_raw",
        "gpu_count",
        "vram_gib_per_gpu",
        "vcpus",
        "cpu_model",
        "ram_gib",
        "system_disk_gb",
        "data_disk_gb",
        "disk_type",
        "max_cuda",
        "driver_version",
        "interconnect",
        "network_up_mbps",
        "network_down_mbps",
        "billing",
        "price_per_hour",
        "currency",
        "price_is_estimate",
        "published_price",
        "published_price_unit",
        "source",
        "seen_on",
        "notes",
        "price_kind",
    ]
    with (out / "offers_public.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in src:
            slug = PUBLISHED_AS[r["provider"]]
            count = float(r["gpu_count"])
            published = float(r["price_per_hour"])
            note = r["price_unit_note"]
            per_gpu = "per gpu-hour" in note.lower()
            price = published * count if per_gpu else published
            notes = r["notes"]
            if per_gpu and count != 1:
                notes += f"; price_per_hour = published per-GPU price x {count:g} GPUs"
            if r["billing"] != BILLING[r["billing"]]:
                notes += f"; published billing label '{r['billing']}'"
            w.writerow(
                {
                    "provider": slug,
                    "offer_key": r["instance_type"],
                    "instance_type": r["instance_type"],
                    "region": r["region"] or "unspecified",
                    "gpu_name_raw": r["gpu"],
                    "gpu_count": f"{count:g}",
                    "vram_gib_per_gpu": r["vram_gb_per_gpu"],
                    "vcpus": r["vcpus"],
                    "cpu_model": "",
                    "ram_gib": r["ram_gb"],
                    "system_disk_gb": r["disk_gb"],
                    "data_disk_gb": "",
                    "disk_type": "",
                    "max_cuda": r["max_cuda"],
                    "driver_version": "",
                    "interconnect": r["interconnect"],
                    "network_up_mbps": "",
                    "network_down_mbps": "",
                    "billing": BILLING[r["billing"]],
                    "price_per_hour": f"{price:.6g}",
                    "currency": r["currency"],
                    "price_is_estimate": "true"
                    if r["billing"] == "marketplace_median"
                    else "false",
                    "published_price": r["price_per_hour"],
                    "published_price_unit": note,
                    "source": r["source"],
                    "seen_on": r["seen_on"],
                    "notes": notes,
                    "price_kind": PRICE_KIND.get(r["billing"], "hand_kept"),
                }
            )
    with (out / "providers.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["slug", "name", "homepage_url", "kind", "source"])
        for published, slug in PUBLISHED_AS.items():
            name, home, kind = provider_of(slug)
            w.writerow(
                [
                    slug,
                    name,
                    home or "",
                    kind,
                    f"seed_data/offers_public.csv (the rows of provider '{slug}', each with "
                    f"its source; published there as '{published}'); homepage_url as the "
                    "provider publishes it",
                ]
            )


def main() -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", type=Path, default=Path("../shared"))
    parser.add_argument("--out", type=Path, default=Path("seed_data"))
    args = parser.parse_args()
    args.out.mkdir(exist_ok=True)
    import_gpus(args.shared, args.out)
    forms = {
        r["canonical_name"]: r["form_factor"]
        for r in csv.DictReader((args.shared / "data/gpu_specs.csv").open(encoding="utf-8"))
    }
    import_benchmarks(args.shared, args.out, forms)
    import_offers(args.shared, args.out)


if __name__ == "__main__":
    main()
