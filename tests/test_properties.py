"""Properties users take for granted, on the served answers of /v1/estimate and /v1/rank.

More GPUs of the same kind and link are never slower; fp32 is slower than fp16 mixed
precision on tensor-core GPUs (presets and custom workloads); more work per sample is never
faster; micro-batch 1 is slower than a full batch; siblings keep their order.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

pytestmark = pytest.mark.db

PRESETS = ["resnet50-imagenet", "bert-base-squad", "gpt2-124m-pretrain", "llama3-8b-lora"]
TENSOR_CORE_GPUS = ["A100 SXM4 80GB", "H100 SXM 80GB", "V100 SXM2 16GB", "GeForce RTX 4090", "L4"]


def rate(client: Any, workload: dict[str, Any], gpu: str, **hardware: Any) -> float:
    r = client.post(
        "/v1/estimate", json={"workload": workload, "hardware": {"gpu": gpu, **hardware}}
    )
    assert r.status_code == 200, r.text
    return float(r.json()["estimate"]["samples_per_s"])


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("gpu", ["A100 SXM4 80GB", "GeForce RTX 4090", "V100 SXM2 16GB"])
@pytest.mark.parametrize("link", ["nvlink", "pcie"])
def test_more_gpus_never_slower(client: Any, preset: str, gpu: str, link: str) -> None:
    counts = [0.25, 0.5, 1, 2, 3, 4, 6, 8, 16]  # whole from 1 up (1.5 GPUs is a 400)
    rates = [rate(client, {"preset": preset}, gpu, gpu_count=n, interconnect=link) for n in counts]
    assert rates == sorted(rates), list(zip(counts, rates, strict=True))
    assert rates[1] == pytest.approx(rates[2] / 2)  # half a GPU: half the rate


CUSTOM = {
    "resnet50-imagenet": {"image_size": 256},
    # BERT-large's shape; kv_heads with heads (full multi-head attention: 16 of 16), since the
    # preset's 12 key/value heads cannot serve 16 query heads (a 400)
    "bert-base-squad": {
        "layers": 24,
        "hidden_size": 1024,
        "heads": 16,
        "kv_heads": 16,
        "params": 335_000_000,
    },
    "gpt2-124m-pretrain": {"seq_len": 2048},
    "llama3-8b-lora": {"seq_len": 4096},
}


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("gpu", TENSOR_CORE_GPUS)
@pytest.mark.parametrize("custom", [False, True])
def test_fp32_slower_than_fp16_amp_on_tensor_cores(
    client: Any, preset: str, gpu: str, custom: bool
) -> None:
    w: dict[str, Any] = {"preset": preset, **(CUSTOM[preset] if custom else {})}
    fp16 = rate(client, {**w, "precision": "fp16_amp"}, gpu)
    fp32 = rate(client, {**w, "precision": "fp32"}, gpu)
    assert fp32 < fp16


@pytest.mark.parametrize(
    ("preset", "field", "values"),
    [
        ("resnet50-imagenet", "image_size", [160, 224, 256, 320]),
        ("bert-base-squad", "seq_len", [128, 384, 512]),
        ("bert-base-squad", "layers", [6, 12, 24]),
        ("gpt2-124m-pretrain", "seq_len", [512, 1024, 2048]),
        ("gpt2-124m-pretrain", "layers", [12, 24, 48]),
        ("llama3-8b-lora", "seq_len", [1024, 2048, 4096]),
        # wider, the parameter count left as the preset's (the width efficiency is bounded
        # by the width those parameters can hold; the attention FLOPs still grow)
        ("transformer-xl-base-wt103", "hidden_size", [512, 768, 1024, 2048, 4096]),
        ("mpt-1b-pretrain", "hidden_size", [2048, 3072, 4096]),
        ("gpt2-124m-pretrain", "hidden_size", [768, 1536, 2304]),
    ],
)
@pytest.mark.parametrize("gpu", ["A100 SXM4 80GB", "GeForce RTX 3090", "L4"])
def test_more_work_per_sample_never_faster(
    client: Any, preset: str, field: str, values: list[int], gpu: str
) -> None:
    rates = [rate(client, {"preset": preset, field: v}, gpu) for v in values]
    assert rates == sorted(rates, reverse=True), list(zip(values, rates, strict=True))
    assert rates[0] > rates[-1]


@pytest.mark.parametrize(
    ("preset", "layers", "heads", "hidden"),
    [
        # the shape and a parameter count that belongs to it (12·L·h² + V·h, GPT-2's vocab)
        ("gpt2-124m-pretrain", 12, 12, [768, 1152, 1536, 2304]),
        ("bert-base-squad", 12, 16, [512, 768, 1024, 2048]),
    ],
)
@pytest.mark.parametrize("gpu", ["A100 SXM4 80GB", "H100 SXM 80GB", "GeForce RTX 3090"])
def test_a_wider_model_with_its_parameters_is_never_faster(
    client: Any,
    preset: str,
    layers: int,
    heads: int,
    hidden: list[int],
    gpu: str,
) -> None:
    vocab = 50_257 if preset.startswith("gpt2") else 30_522
    rates = [
        rate(
            client,
            {
                "preset": preset,
                "hidden_size": h,
                "heads": heads,
                "kv_heads": heads,
                "ffn_hidden_size": 4 * h,
                "params": 12 * layers * h * h + vocab * h,
            },
            gpu,
        )
        for h in hidden
    ]
    assert rates == sorted(rates, reverse=True), list(zip(hidden, rates, strict=True))


#: (preset, layers × width blocks' fewest parameters 12·L·h² (4h² attention + 8h² MLP),
#: parameters outside them: an encoder's 30,522 × 768 token table)
SWEEPS = [
    ("gpt2-124m-pretrain", 12 * 12 * 768**2, 0),  # flops_model on these GPUs
    ("mpt-1b-pretrain", 24 * 12 * 2048**2, 0),  # derived
    ("bert-base-squad", 12 * 12 * 768**2, 30_522 * 768),  # derived, an encoder
]


@pytest.mark.parametrize(("preset", "blocks", "table"), SWEEPS)
@pytest.mark.parametrize("extra", [{}, {"seq_len": 8192}, {"micro_batch_size": 1}])
@pytest.mark.parametrize("gpu", ["A100 SXM4 80GB", "GeForce RTX 3090"])
def test_more_parameters_at_the_same_depth_are_never_faster(
    client: Any, preset: str, blocks: int, table: int, extra: dict[str, int], gpu: str
) -> None:
    # half the blocks' parameters (the fewest accepted) to 4× them: each multiplies every
    # token, so at a long sequence (attention FLOPs dominating), at micro-batch 1 and at the
    # preset's, more never gain
    if preset == "bert-base-squad" and "seq_len" in extra:
        extra = {"seq_len": 512}  # BERT's learned positions stop at 512
    counts = [round(blocks * f) + table for f in (0.5, 0.75, 1, 1.5, 2, 4)]
    rates = [rate(client, {"preset": preset, "params": n, **extra}, gpu) for n in counts]
    assert rates == sorted(rates, reverse=True), list(zip(counts, rates, strict=True))
    assert rates[0] > rates[-1]


@pytest.mark.parametrize(
    ("preset", "params", "gpu", "extra"),
    [
        # measured only at fp8 on H100s: extrapolated to an A100 at bf16, above its peak
        ("llama2-7b-pretrain", 6_738_415_616, "A100 SXM4 80GB", {"samples_per_epoch": 10**6}),
        ("mpt-1b-pretrain", 1_315_950_592, "V100 SXM3 32GB", {}),
    ],
)
def test_one_more_parameter_moves_the_answer_by_a_hair(
    client: Any, preset: str, params: int, gpu: str, extra: dict[str, int]
) -> None:
    # the preset, then the same model with one million more parameters (derived): the
    # answer moves by about the FLOPs ratio, never jumps (a peak cap applied to the derived
    # answer alone had cut it 21-79 %)
    at = rate(client, {"preset": preset, **extra}, gpu)
    more = rate(client, {"preset": preset, "params": params + 1_000_000, **extra}, gpu)
    assert 0.995 * at < more < at


def test_fewer_multiplied_parameters_than_the_layers_hold_is_a_400(client: Any) -> None:
    # GPT-2's 12 blocks of width 768 hold 84,934,656 parameters: a count under half of them
    # (given, or left after a given lookup_params) describes no model of this shape
    for workload, field in (
        ({"preset": "gpt2-124m-pretrain", "params": 40_000_000}, "workload.params"),
        (
            {"preset": "gpt2-124m-pretrain", "lookup_params": 100_000_000},
            "workload.lookup_params",
        ),
        # BERT's 30,522 × 768 token table (23,440,896) is not multiplied: params under it
        ({"preset": "bert-base-squad", "params": 20_000_000}, "workload.params"),
        # two counts: the one whose preset value would pass is named
        (
            {"preset": "gpt2-124m-pretrain", "params": 150_000_000, "lookup_params": 120_000_000},
            "workload.lookup_params",
        ),
    ):
        r = client.post(
            "/v1/estimate", json={"workload": workload, "hardware": {"gpu": "A100 SXM4 80GB"}}
        )
        assert r.status_code == 400, r.text
        assert r.json()["extra"][0]["key"] == field, r.text
    # an encoder preset keeps its own table when the vocabulary or width changes, so a larger
    # vocabulary (looked up, never multiplied) costs nothing and a wider one is slower
    bert = {"preset": "bert-base-squad"}
    plain = rate(client, bert, "A100 SXM4 80GB")
    assert rate(client, {**bert, "vocab_size": 100_000}, "A100 SXM4 80GB") == plain
    # but a table that alone outgrows the parameters is no model
    r = client.post(
        "/v1/estimate",
        json={
            "workload": {**bert, "vocab_size": 250_000, "params": 100_000_000},
            "hardware": {"gpu": "A100 SXM4 80GB"},
        },
    )
    assert r.status_code == 400 and r.json()["extra"][0]["key"] == "workload.vocab_size"
    wide = {**bert, "hidden_size": 3072, "heads": 48, "kv_heads": 48}
    assert rate(client, wide, "A100 SXM4 80GB") < plain


def test_a_derived_workload_never_claims_more_than_the_datasheet_peak(client: Any) -> None:
    # Llama 2 13B as a custom variant of the 7B preset (measured only at fp8 on H100s, in
    # NeMo), asked at bf16 on an A100: FLOPs per sample 6N·s + 12·L·h·s² (s = 4,096) at
    # samples/s must stay within the 312 TFLOP/s bf16 peak (main claimed 1.4× it); since
    # issue 23 an fp8-only measurement stands for no bf16 answer: the FLOPs model answers
    n, layers, h, s = 13_015_864_320, 40, 5120, 4096
    est = _estimate(
        client,
        {
            "preset": "llama2-7b-pretrain",
            "params": n,
            "layers": layers,
            "hidden_size": h,
            "heads": 40,
            "kv_heads": 40,
            "ffn_hidden_size": 13_824,
            "precision": "bf16_amp",
            "micro_batch_size": 2,
            "samples_per_epoch": 100_000,
        },
        "A100 SXM4 80GB",
    )
    assert est["situation"] == "flops_model"
    flops = (6 * n + 12 * layers * h * s) * s
    assert est["samples_per_s"] * flops <= 312e12 * 1.001
    assert est["samples_per_s"] * flops >= 0.3 * 312e12  # not capped into nonsense


@pytest.mark.parametrize("preset", ["mpt-1b-pretrain", "transformer-xl-base-wt103"])
def test_micro_batch_2_faster_than_1_for_a_narrower_variant(client: Any, preset: str) -> None:
    # a derived workload narrower than its preset reads the preset's curve at a fraction of a
    # sample: micro-batch 2 must still gain over 1
    narrow = {"preset": preset, "hidden_size": 1024, "heads": 16, "kv_heads": 16}
    one = rate(client, {**narrow, "micro_batch_size": 1}, "A100 SXM4 80GB")
    two = rate(client, {**narrow, "micro_batch_size": 2}, "A100 SXM4 80GB")
    assert two > one


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("gpu", ["A100 SXM4 80GB", "H100 SXM 80GB", "L4"])
def test_micro_batch_1_slower_than_full_batch(client: Any, preset: str, gpu: str) -> None:
    presets = client.get("/v1/workloads").json()
    full = next(p for p in presets if p["preset"] == preset)["micro_batch_size"]
    assert full > 1
    one = rate(client, {"preset": preset, "micro_batch_size": 1}, gpu)
    assert one < rate(client, {"preset": preset, "micro_batch_size": full}, gpu)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("precision", ["fp16_amp", "fp32"])
def test_siblings_keep_their_order(client: Any, preset: str, precision: str) -> None:
    w = {"preset": preset, "precision": precision}
    sxm = rate(client, w, "A100 SXM4 80GB")
    pcie = rate(client, w, "A100 PCIe 80GB")
    assert 0.9 <= sxm / pcie <= 1.35
    h100 = rate(client, w, "H100 SXM 80GB")
    v100 = rate(client, w, "V100 SXM2 16GB")
    assert h100 > sxm > v100


def _rank(client: Any, preset: str) -> list[dict[str, Any]]:
    r = client.post(
        "/v1/rank", json={"workload": {"preset": preset}, "limit": 1000, "sort": "samples_per_s"}
    )
    assert r.status_code == 200, r.text
    body = r.json()
    return body["results"] + body["frontier"]


@pytest.mark.parametrize("preset", PRESETS)
def test_rank_more_gpus_never_slower_and_generations_keep_order(client: Any, preset: str) -> None:
    rows = _rank(client, preset)
    by: dict[tuple[str, str], dict[float, float]] = {}
    for x in rows:
        o = x["offer"]
        if o["gpu"] is None:
            continue
        key = (o["gpu"], o["interconnect"] or "")
        by.setdefault(key, {})[o["gpu_count"]] = x["estimate"]["samples_per_s"]
    checked = 0
    for key, per_count in by.items():
        counts = sorted(per_count)
        rates = [per_count[n] for n in counts]
        assert rates == sorted(rates), (key, list(zip(counts, rates, strict=True)))
        checked += len(counts) > 1
    assert checked >= 3
    single = {o: r for (o, _), c in by.items() for n, r in c.items() if n == 1}
    assert single["H100 SXM 80GB"] > single["A100 SXM4 80GB"]
    v100 = [r for (g, _), c in by.items() if g.startswith("V100") for n, r in c.items() if n == 1]
    assert v100 and single["A100 SXM4 80GB"] > max(v100)


def test_rank_uses_one_software_level_for_every_gpu(client: Any) -> None:
    # ResNet-50: every single-GPU estimate stands at the same suite's level, so the A100
    # SXM and PCIe boards of the same memory are within the siblings' band
    rows = _rank(client, "resnet50-imagenet")
    single = {
        x["offer"]["gpu"]: x["estimate"]["samples_per_s"]
        for x in rows
        if x["offer"]["gpu_count"] == 1 and x["offer"]["gpu"]
    }
    if "A100 PCIe 80GB" in single and "A100 SXM4 80GB" in single:
        assert 0.9 <= single["A100 SXM4 80GB"] / single["A100 PCIe 80GB"] <= 1.35
    notes = {
        n
        for x in rows
        for n in x["estimate"]["notes"]
        if "software level" in n and x["offer"]["gpu_count"] == 1
    }
    levels = {n.split("software level of ")[1] for n in notes}
    assert len(levels) == 1, levels


def test_rank_orders_one_model_by_hardware_not_by_suite(client: Any) -> None:
    # main scaled every other GPU from torchtitan's H100 pre-training group and ranked the
    # RTX 4090 D (a cut-down 4090: fewer SMs, same memory) first at 3,284 tok/s (torchtune's
    # own RTX 4090 row, 1650 tok/s, is held suspect since issue 23: its table's A6000 row
    # implies more than the A6000's peak)
    r = client.post(
        "/v1/rank",
        json={
            "workload": {"preset": "llama31-8b-full-single-device"},
            "filters": {"gpu_count": 1},
            "limit": 1000,
            "sort": "samples_per_s",
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    single = {
        x["offer"]["gpu"]: x["estimate"]["samples_per_s"] * 2048
        for x in body["results"] + body["frontier"]
        if x["offer"]["gpu"]
    }
    assert single["GeForce RTX 4090 D"] <= single["GeForce RTX 4090"]
    assert single["GeForce RTX 3090"] < single["GeForce RTX 4090"]
    notes = {
        n.split("software level of ")[1]
        for x in body["results"] + body["frontier"]
        for n in x["estimate"]["notes"]
        if "software level of " in n
    }
    assert len(notes) == 1, notes


@pytest.mark.parametrize(
    ("workload", "gpu", "situation", "words"),
    [
        (
            {"preset": "bert-base-squad", "precision": "fp16_amp", "micro_batch_size": 320},
            "A100 SXM4 80GB",
            "measured",
            "measured on this GPU model: the per-GPU rate is the mean",
        ),
        (
            {"preset": "bert-base-squad"},
            "A100 PCIe 40GB",
            "measured_rescaled",
            "measured on this GPU model at another software level, micro-batch or precision",
        ),
        ({"preset": "bert-base-squad"}, "L40S", "sibling", "same architecture"),
        ({"preset": "bert-base-squad"}, "B200", "extrapolated", "other GPU architectures"),
        ({"preset": "vit-b16-imagenet"}, "A100 SXM4 80GB", "flops_model", "never measured"),
        ({"preset": "bert-base-squad", "layers": 24}, "A100 SXM4 80GB", "derived", "derived"),
        (
            {"preset": "llama32-3b-lora", "precision": "fp32"},
            "A100 SXM4 80GB",
            "precision_switch",
            "only at another precision",
        ),
    ],
)
def test_answer_names_the_situation_in_words(
    client: Any, workload: dict[str, Any], gpu: str, situation: str, words: str
) -> None:
    r = client.post("/v1/estimate", json={"workload": workload, "hardware": {"gpu": gpu}})
    assert r.status_code == 200, r.text
    e = r.json()["estimate"]
    assert e["situation"] == situation
    # the situation's words lead the estimate's own notes (after what was done to the input)
    assert any(words in n for n in e["notes"][:2]), e["notes"]
    assert e["samples_per_s_low"] < e["samples_per_s"] < e["samples_per_s_high"]


def _estimate(client: Any, workload: dict[str, Any], gpu: str, **hardware: Any) -> dict[str, Any]:
    r = client.post(
        "/v1/estimate", json={"workload": workload, "hardware": {"gpu": gpu, **hardware}}
    )
    assert r.status_code == 200, r.text
    return dict(r.json()["estimate"])


@pytest.mark.parametrize(
    "preset", ["gpt2-124m-pretrain", "llama31-70b-lora", "llama31-405b-qlora", "vit-b16-imagenet"]
)
@pytest.mark.parametrize(
    "gpu", ["GeForce RTX 3090", "GeForce RTX 4090", "A100 SXM4 80GB", "H100 SXM 80GB", "L4"]
)
def test_answer_never_implies_more_than_the_credible_mfu(
    client: Any, preset: str, gpu: str
) -> None:
    # implied MFU = samples/s × model FLOPs per sample ÷ the dense peak at the precision run;
    # main claimed 0.98 of an RTX 3090's 71 TFLOP/s (torchtune's 4090 LoRA row, now suspect)
    from app.model.calibration import load_calibration

    e = _estimate(client, {"preset": preset}, gpu)
    assert e["mfu"] is not None and e["hfu"] >= e["mfu"] > 0
    highest = max(v[2] for v in load_calibration().mfu_range.values() if v[2] <= 1)
    assert e["mfu"] <= highest + 1e-9, e["notes"]
    assert any(n.startswith("implied MFU") for n in e["notes"])


def test_credible_mfu_table_is_measured() -> None:
    from app.model.calibration import load_calibration

    # every cell is a measured range inside the peak; transformers at 16-bit stay below the
    # 0.75 plausibility limit (torchtune's Llama 3.2 3B + compile on an A100: 0.69) and fp8
    # is its own class (Megatron-Bridge and torchtitan Float8 rows, lower over the fp8 peak)
    cells = load_calibration().mfu_range
    assert all(0 < lo <= mid <= top <= 1 and hfu >= top for lo, mid, top, hfu, _ in cells.values())
    assert cells["transformer|1B-20B|16"][2] == pytest.approx(0.69, abs=0.01)
    assert cells["transformer|1B-20B|8"][2] < cells["transformer|1B-20B|16"][2]


def test_suspect_measurement_is_not_served_as_measured(client: Any) -> None:
    # benchmark 2745: torchtune, RTX 4090, the preset's recipe: 1650 tok/s, held suspect (its
    # README table's A6000 LoRA row implies 166 TFLOP/s against a 154.8 TFLOPS peak)
    e = _estimate(client, {"preset": "llama31-8b-full-single-device"}, "GeForce RTX 4090")
    assert e["situation"] != "measured"
    assert 2745 not in [x["benchmark_id"] for x in e["evidence"]]


@pytest.mark.parametrize(
    ("preset", "benchmark_id", "tokens_per_s", "within"),
    [
        ("llama32-3b-full", 2739, 6960, 0.2),
        ("llama32-3b-lora", 2740, 8210, 0.1),
        ("llama32-3b-qlora", 2741, 8035, 0.1),
    ],
)
def test_unstated_a100_variant_measurements_stand_for_their_preset(
    client: Any, preset: str, benchmark_id: int, tokens_per_s: float, within: float
) -> None:
    # torchtune's Llama 3.2 3B table ran on "A100 (variant not stated)" (60 GiB in one row:
    # an 80GB board; both 80GB boards compute alike). Main called the workload never measured.
    e = _estimate(client, {"preset": preset}, "A100 SXM4 80GB")
    assert e["situation"] == "sibling", e["notes"]
    assert benchmark_id in [x["benchmark_id"] for x in e["evidence"]]
    assert not any("never measured" in n for n in e["notes"])
    # the full preset's group also holds the table's seven other technique combinations
    # (2,091-9,174 tok/s), each at the preset's checkpointing (on): the four rows the table
    # runs without it stand at 3/4 of their rate (2,091 and 7,075 without compile or chunked
    # cross-entropy → 1,568 and 5,306; 8,998 and 9,174 → 6,749 and 6,881, in line with the
    # four rows with it, 6,960-7,309), so the first two pull the group 17 % below the preset's
    # own row; the adapter presets' groups are their one row each
    assert e["samples_per_s"] * 4096 == pytest.approx(tokens_per_s, rel=within)


MULTI_PRESETS = ["resnet50-imagenet", "bert-base-squad", "gpt2-124m-pretrain", "llama3-8b-lora"]


@pytest.mark.parametrize("preset", MULTI_PRESETS)
@pytest.mark.parametrize("gpu", ["A100 SXM4 80GB", "H100 SXM 80GB", "V100 SXM2 16GB"])
def test_multi_gpu_common_sense(client: Any, preset: str, gpu: str) -> None:
    counts = [1, 2, 3, 4, 6, 8, 16]
    rates = {
        link: [
            rate(client, {"preset": preset}, gpu, gpu_count=n, interconnect=link) for n in counts
        ]
        for link in ("pcie", "nvlink")
    }
    for link, totals in rates.items():
        per_gpu = [t / n for t, n in zip(totals, counts, strict=True)]
        # (1e-9: the same efficiency times n, divided by n)
        assert all(b <= a * (1 + 1e-9) for a, b in itertools.pairwise(per_gpu)), (link, per_gpu)
        assert totals == sorted(totals), (link, totals)
    for n, pcie, nvlink in zip(counts, rates["pcie"], rates["nvlink"], strict=True):
        assert pcie <= nvlink, (n, pcie, nvlink)


def test_resnet50_8_a100_over_pcie_not_faster_than_measured_nvlink(client: Any) -> None:
    # main: PCIe model 0.956 (11,884 samples/s) over the measured NVLink 0.904 (11,239)
    nvlink = _estimate(
        client,
        {"preset": "resnet50-imagenet"},
        "A100 SXM4 80GB",
        gpu_count=8,
        interconnect="nvlink",
    )
    pcie = _estimate(
        client, {"preset": "resnet50-imagenet"}, "A100 SXM4 80GB", gpu_count=8, interconnect="pcie"
    )
    assert nvlink["multi_gpu_basis"] == "measured"
    assert nvlink["multi_gpu_efficiency"] == pytest.approx(0.904, abs=0.005)
    assert pcie["samples_per_s"] <= nvlink["samples_per_s"]
    sixteen = _estimate(
        client,
        {"preset": "resnet50-imagenet"},
        "A100 SXM4 80GB",
        gpu_count=16,
        interconnect="nvlink",
    )
    assert sixteen["samples_per_s"] / 16 <= nvlink["samples_per_s"] / 8


@pytest.mark.parametrize("preset", ["resnet50-imagenet", "bert-base-squad"])
def test_nvlink_on_a_gpu_without_it_warns_and_is_pcie(client: Any, preset: str) -> None:
    w = {"preset": preset}
    for n in (2, 4, 8):
        asked = _estimate(client, w, "GeForce RTX 4090", gpu_count=n, interconnect="nvlink")
        pcie = _estimate(client, w, "GeForce RTX 4090", gpu_count=n, interconnect="pcie")
        assert asked["samples_per_s"] == pytest.approx(pcie["samples_per_s"])
        assert "nvlink_unavailable" in {x["code"] for x in asked["warnings"]}
        assert "nvlink_unavailable" not in {x["code"] for x in pcie["warnings"]}
    one = _estimate(client, w, "A100 SXM4 80GB", gpu_count=8, interconnect="nvlink")
    assert "nvlink_unavailable" not in {x["code"] for x in one["warnings"]}


def test_fp8_does_not_speed_up_a_cnn(client: Any) -> None:
    # main: 5,665 samples/s from the FLOPs model against 2,569 measured at fp16, no warning
    fp8 = _estimate(client, {"preset": "resnet50-imagenet", "precision": "fp8"}, "H100 SXM 80GB")
    bf16 = _estimate(
        client, {"preset": "resnet50-imagenet", "precision": "bf16_amp"}, "H100 SXM 80GB"
    )
    assert fp8["samples_per_s"] == pytest.approx(bf16["samples_per_s"])
    assert fp8["situation"] == bf16["situation"] == "measured_rescaled"
    found = [x for x in fp8["warnings"] if x["code"] == "fp8_transformer_only"]
    assert found and found[0]["values"]["runs_at_precision"] == "bf16_amp"
    # a transformer keeps its fp8 estimate and has no such warning
    gpt = _estimate(client, {"preset": "gpt2-124m-pretrain", "precision": "fp8"}, "H100 SXM 80GB")
    assert "fp8_transformer_only" not in {x["code"] for x in gpt["warnings"]}


def test_rank_multi_gpu_common_sense(client: Any) -> None:
    rows = _rank(client, "resnet50-imagenet")
    by: dict[tuple[str, str], dict[float, float]] = {}
    for x in rows:
        o = x["offer"]
        if o["gpu"] is None:
            continue
        if "data_loader_bound" in {w["code"] for w in x["estimate"].get("warnings", [])}:
            continue  # too few vCPUs for the offer: the loader, not the GPUs, sets its rate
        text = (o["interconnect"] or "").lower()
        sxm = "SXM" in o["gpu"]
        link = "nvlink" if "nv" in text or (not text and sxm) else "pcie"
        here = by.setdefault((o["gpu"], link), {})
        here[o["gpu_count"]] = max(here.get(o["gpu_count"], 0.0), x["estimate"]["samples_per_s"])
    checked = 0
    for (gpu, link), per_count in by.items():
        counts = sorted(per_count)
        per_gpu = [per_count[n] / n for n in counts]
        assert all(b <= a * (1 + 1e-9) for a, b in itertools.pairwise(per_gpu)), (gpu, per_gpu)
        checked += len(counts) > 1
        other = by.get((gpu, "nvlink"), {}) if link == "pcie" else {}
        for n, v in per_count.items():
            if n in other:
                assert v <= other[n] * (1 + 1e-9), (gpu, n, v, other[n])
    assert checked >= 3


FP8_PRESETS = [
    "bert-large-pretrain-seq512",
    "bert-base-squad",
    "mpt-13b-pretrain",
    "llama31-8b-pretrain",
    "gpt2-124m-pretrain",
]


@pytest.mark.parametrize("preset", FP8_PRESETS)
@pytest.mark.parametrize("gpu", ["H100 SXM 80GB", "H200 SXM 141GB", "L4", "GeForce RTX 4090"])
def test_fp8_never_below_bf16_on_the_same_gpu(client: Any, preset: str, gpu: str) -> None:
    w = {"preset": preset, "samples_per_epoch": 100_000}  # not every preset has a dataset size
    bf16 = rate(client, {**w, "precision": "bf16_amp"}, gpu)
    fp8 = rate(client, {**w, "precision": "fp8"}, gpu)
    assert fp8 >= bf16 * (1 - 1e-9), (fp8, bf16)


def test_fp8_for_a_workload_measured_at_16_bit_only_stands_at_that_rate(client: Any) -> None:
    # NVIDIA DLE measured BERT-large phase-1 pre-training at 16-bit, never at fp8; main fell
    # to the FLOPs model at the fp8 peak: 764 samples/s on an H100 against 1,034 at bf16_amp
    def answer(precision: str) -> dict[str, Any]:
        r = client.post(
            "/v1/estimate",
            json={
                "workload": {
                    "preset": "bert-large-pretrain-seq128",
                    "precision": precision,
                    "samples_per_epoch": 100_000,
                },
                "hardware": {"gpu": "H100 SXM 80GB"},
            },
        )
        assert r.status_code == 200, r.text
        return dict(r.json()["estimate"])

    fp8, bf16 = answer("fp8"), answer("bf16_amp")
    assert fp8["situation"] != "flops_model"
    assert fp8["precision"] in ("bf16_amp", "fp16_amp")
    assert bf16["precision"] == "bf16_amp"
    assert fp8["samples_per_s"] == pytest.approx(bf16["samples_per_s"], rel=1e-6)
    codes = {w["code"]: w["values"] for w in fp8["warnings"]}
    assert codes["fp8_gain_unmeasured"]["estimated_at_precision"] == fp8["precision"]
    assert any("gain is unmeasured" in n for n in fp8["notes"])
    assert "fp8_gain_unmeasured" not in {w["code"] for w in bf16["warnings"]}


def test_fp8_gain_extrapolated_is_bounded_and_warned(client: Any) -> None:
    # Llama 2 13B was measured at fp8 on H100s only (NeMo): on an L40S its fp8 answer came
    # out 3.4× the bf16 one; now held to the highest fp8/16-bit gain measured on one job
    # (calibration fp8_gain, 1.70: torchtitan Llama 3.1 405B on 128 H100s) and warned
    def answer(precision: str, gpu: str) -> dict[str, Any]:
        r = client.post(
            "/v1/estimate",
            json={
                "workload": {
                    "preset": "llama2-13b-pretrain",
                    "precision": precision,
                    "samples_per_epoch": 100_000,
                },
                "hardware": {"gpu": gpu},
            },
        )
        assert r.status_code == 200, r.text
        return dict(r.json()["estimate"])

    fp8, bf16 = answer("fp8", "L40S"), answer("bf16_amp", "L40S")
    assert fp8["precision"] == "fp8"
    assert fp8["samples_per_s"] <= bf16["samples_per_s"] * 1.6972 * (1 + 1e-6)
    codes = {w["code"]: w["values"] for w in fp8["warnings"]}
    gain = codes["fp8_gain_extrapolated"]["fp8_gain"]
    assert gain == pytest.approx(fp8["samples_per_s"] / bf16["samples_per_s"], rel=1e-2)
    assert "fp8_gain_extrapolated" not in {w["code"] for w in bf16["warnings"]}
    # measured at fp8 on this GPU: no warning
    h100 = answer("fp8", "H100 SXM 80GB")
    assert "fp8_gain_extrapolated" not in {w["code"] for w in h100["warnings"]}
