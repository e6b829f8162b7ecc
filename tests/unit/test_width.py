"""A transformer's FLOPs without its lookup tables, and the share of the peak its width
reaches (``width_efficiency``), as the derived and FLOPs-model situations use them."""

from __future__ import annotations

import dataclasses
import math

import pytest

from app.calibrate.validate import WidthPair, WidthShape, best_width_h0
from app.data.load import load_points, load_presets
from app.model.calibration import Calibration, load_calibration
from app.model.flops import matmul_params, matmul_width
from app.model.pooled import matmul_rows_per_sample
from app.model.throughput import (
    estimate_throughput,
    training_flops_per_sample,
    width_efficiency,
)
from app.model.types import Architecture, Precision, Situation, Workload
from app.services.reference import ReferenceData
from app.services.workloads import WorkloadError, resolve_workload
from app.settings import PROJECT_ROOT
from tests.unit.helpers import A100_80_SXM, BERT_SQUAD_SHAPE, preset_reference
from tests.unit.test_throughput import BERT, point

#: Transformer-XL base as DLE builds it (workloads.csv): 191,950,298 parameters, of which the
#: 267,735 × 512 tied table's rows outside the 19,997-word head cluster are lookups only
TXL_FIELDS: dict[str, int] = {
    "params": 191_950_298,
    "layers": 16,
    "hidden_size": 512,
    "heads": 8,
    "vocab_size": 267_735,
    "seq_len": 192,
    "samples_per_epoch": 537_640,
    "lookup_params": 126_841_856,
}
TXL_BASE = Workload(
    architecture=Architecture.TRANSFORMER_DECODER,
    micro_batch_size=32,
    precision=Precision.FP16_AMP,
    **TXL_FIELDS,  # type: ignore[arg-type]
)


def with_h0(h0: dict[str, float]) -> Calibration:
    """The served calibration with ``width_h0`` set to ``h0``."""
    return dataclasses.replace(load_calibration(), width_h0=h0)


def test_lookup_params_leave_the_flops_count() -> None:
    # 191,950,298 − (267,735 − 19,997) × 512 = 65,108,442 multiplied per token
    assert matmul_params(TXL_BASE) == 65_108_442
    # per token 6 × 65,108,442 + 12 × 16 × 512 × 192 = 409,525,020; × 192 tokens
    assert training_flops_per_sample(TXL_BASE) == pytest.approx(409_525_020 * 192)
    # without the field a decoder counts every parameter
    plain = dataclasses.replace(TXL_BASE, lookup_params=None)
    assert matmul_params(plain) == 191_950_298
    # an encoder's default is its vocab × hidden table (BERT-base: 86,042,882)
    bert = dataclasses.replace(BERT, vocab_size=30_522)
    assert matmul_params(bert) == 109_483_778 - 30_522 * 768


def test_width_efficiency_is_h_over_h_plus_h0_at_the_width_the_parameters_make() -> None:
    # Transformer-XL base: √(65,108,442 / (12 × 16)) = 582.3 wide
    assert matmul_width(TXL_BASE) == pytest.approx(582.32, abs=0.01)
    cal = with_h0({"transformer": 1000.0})
    assert width_efficiency(TXL_BASE, cal) == pytest.approx(582.32 / 1582.32, abs=1e-5)
    # Transformer-XL large: √(268,379,610 / (12 × 18)) = 1,114.7
    large = dataclasses.replace(
        TXL_BASE, params=285_167_482, layers=18, hidden_size=1024, lookup_params=16_787_872
    )
    assert width_efficiency(large, cal) == pytest.approx(1114.69 / 2114.69, abs=1e-5)
    cnn = Workload(architecture=Architecture.CNN, params=25_557_032, samples_per_epoch=1)
    assert width_efficiency(cnn, cal) == 1.0
    assert width_efficiency(TXL_BASE, with_h0({})) == 1.0


def test_best_width_h0_recovers_the_h0_its_pairs_were_made_with() -> None:
    # (matmul FLOPs, attention FLOPs, width) per sample; rate ratios from the time model
    # T = M·(1 + h0/h) + A
    nets: list[tuple[WidthShape, WidthShape]] = [
        ((6e9, 1e9, 512.0), (24e9, 2e9, 1024.0)),
        ((9e9, 0.0, 768.0), (80e9, 1e9, 2048.0)),
        ((20e9, 5e9, 1024.0), (300e9, 5e9, 4096.0)),
        ((50e9, 1e9, 2048.0), (900e9, 9e9, 8192.0)),
    ]

    def made(h0: float) -> list[WidthPair]:
        def time(n: WidthShape) -> float:
            return n[0] * (1 + h0 / n[2]) + n[1]

        return [(a, b, math.log(time(b) / time(a))) for a, b in nets]

    assert best_width_h0(made(1000.0)) == 1000.0
    assert best_width_h0(made(0.0)) == 0.0
    # 631 = round(10 ** 2.80), the grid point (steps of 10 ** 0.01) nearest 630
    assert best_width_h0(made(630.0)) == 631.0


def test_matmul_rows_carry_a_micro_batch_between_widths() -> None:
    # tokens × matmul width: BERT (no vocab given) 384 × √(109,483,778 / 144) = 384 × 871.95
    assert matmul_rows_per_sample(BERT) == pytest.approx(384 * 871.95, rel=1e-5)
    assert matmul_rows_per_sample(TXL_BASE) == pytest.approx(192 * 582.328, rel=1e-5)


def test_a_wider_variant_is_scaled_by_flops_and_width() -> None:
    # BERT-base measured at 443 sequences/s (micro-batch 320, width √(109.5M / 144) = 871.95);
    # a variant of 12 layers 1,024 wide (12 · 12 · 1,024² = 151.0M parameters) at the same
    # micro-batch is read on BERT's curve at 320 × 1,024 / 871.95 = 376, times the ratio of
    # time-weighted FLOPs
    pts = [point("A100 SXM4 80GB", 443, 320)]
    wider = dataclasses.replace(
        BERT, hidden_size=1024, params=12 * 12 * 1024 * 1024, matches_preset=False
    )
    cal = with_h0({"transformer": 1000.0})
    tp = estimate_throughput(wider, A100_80_SXM, points=pts, reference=BERT, cal=cal)
    assert tp.situation == Situation.DERIVED

    # time-weighted FLOPs per sample, 384 tokens: 6N · (1 + 1000/h) + 12·L·h·s per token
    # (attention at hidden 768 and 1,024: not divided by the width efficiency)
    def weighted(n: int, h: float, hidden: int) -> float:
        return (6 * n * (1 + 1000 / h) + 12 * 12 * hidden * 384) * 384

    ratio = weighted(109_483_778, 871.95, 768) / weighted(12 * 12 * 1024 * 1024, 1024, 1024)
    # BERT's curve b / (b + 1,024 tokens / 384) read at 320 × 1,024 / 871.95 = 375.8
    # instead of its measured 320: +0.12 %
    b = 320 * 1024 / 871.95
    batch = (b / (b + 1024 / 384)) / (320 / (320 + 1024 / 384))
    assert tp.samples_per_s == pytest.approx(443 * ratio * batch, rel=1e-4)
    # the old rule (FLOPs ratio × efficiency ratio) is 0.35 % off: not what is served
    flops = training_flops_per_sample(BERT) / training_flops_per_sample(wider)
    old = 443 * flops * (1024 / 2024) / (871.95 / 1871.95)
    assert tp.samples_per_s != pytest.approx(old, rel=1e-3)


def _txl_reference() -> ReferenceData:
    return preset_reference("txl", {"architecture": "transformer_decoder", **TXL_FIELDS})


def test_lookup_params_0_is_a_change_for_an_encoder_not_for_a_decoder() -> None:
    # an encoder's unset lookup_params means its vocab × hidden table; 0 means none
    bert = {
        "architecture": "transformer_encoder",
        **BERT_SQUAD_SHAPE,
        "vocab_size": 30_522,
        "samples_per_epoch": 88_641,
    }
    ref = preset_reference("bert", bert)
    same, reference, _ = resolve_workload({"preset": "bert"}, ref)
    assert reference is None and same.matches_preset
    zero, reference, _ = resolve_workload({"preset": "bert", "lookup_params": 0}, ref)
    assert reference is not None and not zero.matches_preset
    assert matmul_params(zero) == 109_483_778  # every parameter multiplied
    gpt = {**bert, "architecture": "transformer_decoder"}
    ref = preset_reference("gpt", gpt)
    zero, reference, _ = resolve_workload({"preset": "gpt", "lookup_params": 0}, ref)
    assert reference is None and zero.matches_preset


def test_a_changed_table_shape_keeps_the_presets_lookup_params_and_says_so() -> None:
    ref = _txl_reference()
    deeper, _, _ = resolve_workload({"preset": "txl", "layers": 24, "params": 246_550_000}, ref)
    assert deeper.lookup_params == 126_841_856  # the same tables
    assert not any("lookup" in n for n in deeper.input_notes)
    # a new table shape: the preset's count kept, with or without a new parameter count, so
    # the multiplied parameters follow params smoothly (no jump between 253M and 260M) and
    # restating the preset's params changes nothing
    multiplied = []
    for given in (
        {"hidden_size": 1024, "params": 253_000_000},
        {"hidden_size": 1024, "params": 260_000_000},
        {"hidden_size": 1024},
        {"hidden_size": 1024, "params": 191_950_298},
        {"vocab_size": 535_470, "params": 200_000_000},
    ):
        w, _, _ = resolve_workload({"preset": "txl", **given}, ref)
        assert w.lookup_params == 126_841_856
        assert any("give lookup_params for your model" in n for n in w.input_notes)
        multiplied.append(matmul_params(w))
    # hidden_size alone moves params by the shape (issue 25), its blocks only (the tables are
    # the preset's lookup_params, kept): 16 x (4·1024² + 2·1024·4096) - 16 x (4·512² +
    # 2·512·2048) = 150,994,944 more, so params 342,945,242 of which 216,103,386 multiplied
    assert multiplied == [126_158_144, 133_158_144, 216_103_386, 65_108_442, 73_158_144]
    given_lookup, _, _ = resolve_workload(
        {"preset": "txl", "hidden_size": 1024, "params": 600_000_000, "lookup_params": 1}, ref
    )
    assert given_lookup.lookup_params == 1
    changed_arch, _, _ = resolve_workload(
        {"preset": "txl", "architecture": "transformer_encoder"}, ref
    )
    assert changed_arch.lookup_params is None
    assert any("with architecture changed" in n for n in changed_arch.input_notes)


def test_lookup_params_must_be_fewer_than_params() -> None:
    ref = _txl_reference()
    with pytest.raises(WorkloadError) as err:
        resolve_workload({"preset": "txl", "lookup_params": 191_950_298}, ref)
    assert err.value.field == "workload.lookup_params"
    # params cut to the preset's own tables or below: the edited field is named
    with pytest.raises(WorkloadError) as err:
        resolve_workload({"preset": "txl", "params": 126_841_856}, ref)
    assert err.value.field == "workload.params"
    assert "126,841,856 lookup-only" in err.value.reason


def test_a_width_without_its_parameters_moves_no_efficiency() -> None:
    cal = with_h0({"transformer": 575.0})
    own = width_efficiency(BERT, cal)
    assert own == pytest.approx(871.95 / (871.95 + 575), rel=1e-5)
    widened = dataclasses.replace(BERT, hidden_size=2304)  # params unchanged
    assert width_efficiency(widened, cal) == own
    # with the parameters of 12 layers 2,304 wide (12 · 12 · 2,304²) it is 2,304 wide
    filled = dataclasses.replace(widened, params=12 * 12 * 2304 * 2304)
    assert width_efficiency(filled, cal) == pytest.approx(2304 / (2304 + 575))


def test_lambdas_transformer_xl_runs_are_read_as_the_network_they_ran() -> None:
    # Lambda's configs (lambdal/deeplearning-benchmark pytorch/scripts/config_v0|v1) give no
    # --adaptive: one tied 267,735 × d table and a full softmax; large at tgt_len 256
    presets = {p.slug: p for p in load_presets(PROJECT_ROOT / "seed_data")}
    base, large = (
        presets["transformer-xl-base-wt103-lambda"],
        presets["transformer-xl-large-wt103-lambda"],
    )
    # DLE base 191,950,298 less the adaptive softmax's cluster weight/bias 3 × 512 + 3
    assert base.fields["params"] == 191_950_298 - 1_539 == 191_948_759
    # 18 × 13,640,704 + 2,048 + 267,735 × 1,024 + 267,735
    assert large.fields["params"] == 18 * 13_640_704 + 2_048 + 267_735 * 1_024 + 267_735
    assert (base.fields["seq_len"], large.fields["seq_len"]) == (192, 256)
    assert large.units_per_sample == 256
    assert base.fields.get("lookup_params") is None  # every token meets the whole table
    # per token: 6 × 191,948,759 + 12 × 16 × 512 × 192 = 1,170,566,922 FLOPs (DLE: 409,525,020)
    w = dataclasses.replace(TXL_BASE, params=191_948_759, lookup_params=None)
    assert training_flops_per_sample(w) == pytest.approx(1_170_566_922 * 192)
    # every Lambda row of these labels states the sequence length its config ran
    labels = {base.benchmark_workloads[0]: 192, large.benchmark_workloads[0]: 256}
    points, _ = load_points(PROJECT_ROOT / "seed_data")
    rows = [p for p in points if p.workload in labels]
    assert len(rows) == 212 + 182
    assert all(p.seq_len == labels[p.workload] for p in rows)
    assert all(p.source.startswith("lambda_pytorch") for p in rows)
