"""Pure pieces of the web layer: chart layout, display formatting, flat query parsing."""

from __future__ import annotations

import datetime as dt
import math

import pytest
from markupsafe import Markup

from app.interface.counts import parse_count
from app.interface.query import ParamError, order_rows, parse_offer_query, parse_rank_query
from app.web import charts
from app.web.format import (
    compact,
    hours,
    hours_range,
    linkify,
    money,
    money_range,
    money_short,
    num,
)
from app.web.forms import canonical_choices, human_count
from app.web.rank_context import url


def d(key: int, x: float, y: float, frontier: bool = False) -> charts.Datum:
    return charts.Datum(
        key=key,
        x=x,
        y=y,
        label=f"offer {key}",
        href=f"/offers/{key}",
        classes="pt frontier" if frontier else "pt",
        frontier=frontier,
    )


def test_axis_is_linear_from_zero_until_the_range_is_wide() -> None:
    scale, ticks = charts.axis([0.04, 0.08], 300, 0, money_short)
    assert not scale.log and scale.lo == 0 and scale(0) == 300
    assert [t.label for t in ticks][:2] == ["$0", "$0.02"]
    scale, ticks = charts.axis([0.002, 120], 0, 100, money_short)
    assert scale.log and scale.lo == pytest.approx(0.002) and scale.hi == pytest.approx(200)
    assert len(ticks) <= 8 and [t.label for t in ticks] == ["$0.01", "$0.1", "$1", "$10", "$100"]


def test_time_axis_ticks_at_round_durations() -> None:
    _, ticks = charts.axis([0.3, 400], 0, 100, hours, log_marks=charts.DURATION_MARKS_H)
    assert [t.label for t in ticks] == ["15 min", "1 h", "3 h", "12 h", "2 d", "7 d", "30 d"]


def test_scatter_lays_out_points_frontier_and_overlaps() -> None:
    data = [
        d(1, 10, 1, frontier=True),
        d(2, 1, 10, frontier=True),
        d(3, 5, 8),
        d(4, 5, 8),
        d(5, math.inf, 1),
        d(6, 2, 0),
    ]
    layout = charts.scatter(data, x_format=hours, y_format=money_short, x_label="t", y_label="c")
    assert layout.skipped == 2
    assert {p.key for p in layout.points} == {1, 2, 3, 4}
    # frontier points are drawn last (on top), and joined left to right
    assert [p.key for p in layout.points][-2:] in ([1, 2], [2, 1])
    by_key = {p.key: p for p in layout.points}
    assert layout.line == f"{by_key[2].cx},{by_key[2].cy} {by_key[1].cx},{by_key[1].cy}"
    assert by_key[3].label == "offer 3 (and 1 other offer at this point)"
    for p in layout.points:
        assert layout.left <= p.cx <= layout.right and layout.top <= p.cy <= layout.bottom
    # cheaper is lower on screen: y grows downwards in SVG
    assert by_key[1].cy > by_key[2].cy


def test_timeline_steps_and_day_ticks() -> None:
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    obs = [(t0, 2.0), (t0 + dt.timedelta(days=10), 1.5)]
    layout = charts.timeline(obs, y_format=money_short, y_label="p", now=t0 + dt.timedelta(days=20))
    assert len(layout.points) == 2 and len(layout.line.split()) == 4  # step: 2 + 1 corner + now
    labels = [t.label for t in layout.x_ticks]
    assert labels[0] == "2026-01-02" and len(labels) <= 6
    assert all(dt.date.fromisoformat(x) for x in labels)


def test_memory_bar_scales_to_the_larger_of_peak_and_usable() -> None:
    segs, usable_at, full = charts.memory_bar([("W", "weights", 10), ("A", "activations", 30)], 20)
    assert full == pytest.approx(40 * 1.08)
    assert segs[1].x == pytest.approx(segs[0].w) and segs[1].of_usable == pytest.approx(1.5)
    assert usable_at == pytest.approx(100 * 20 / full, abs=0.01)


def test_formatting() -> None:
    assert num(1234.5) == "1,234" and num(12.3456) == "12.3" and num(0.012345) == "0.0123"
    assert num(None) == "—" and num(math.inf) == "∞"
    # currencies as the locale writes them (CLDR, through Babel): CN¥ in English, ¥ in Chinese
    assert money(0.0412) == "$0.0412" and money(12.345, "CNY") == "CN¥12.35"
    assert money(12.345, "CNY", lang="zh-CN") == "¥12.35"
    assert money(0.0412, lang="zh-CN") == "US$0.0412"
    assert money(1234.5) == "$1,234" and money(3, "EUR") == "€3.00"
    assert hours(0) == "0" and hours(0.001) == "4 s" and hours(0.39) == "23 min"
    assert hours(13.85) == "13.8 h" and hours(350) == "14.6 d" and hours(math.inf) == "∞"
    assert hours(0.39, lang="zh-CN") == "23 分钟" and hours(350, lang="zh-CN") == "14.6 天"
    assert human_count(25_557_032) == "25.6M" and human_count(8_030_261_248) == "8.03B"
    # ranges name the unit or symbol once when both ends share it
    assert money_range(0.231, 0.338, "USD") == "$0.231–0.338"
    assert money_range(1.62, 2.37, "CNY", lang="zh-CN") == "¥1.62–2.37"
    assert hours_range(0.35, 0.5) == "21–30 min" and hours_range(0.98, 1.32) == "59 min–1.32 h"
    # large throughputs in the locale's compact form, three significant figures
    assert compact(4_512_345) == "4.51M" and compact(123_456, lang="zh-CN") == "12.3万"
    assert compact(20_160) == "20,160"


def test_linkify_escapes_and_links_only_http() -> None:
    out = linkify("see https://a.b/c?x=1&y=2. <b>bold</b> javascript:alert(1)")
    assert isinstance(out, Markup)
    assert '<a href="https://a.b/c?x=1&amp;y=2" rel="noopener noreferrer nofollow">' in out
    assert "&lt;b&gt;bold&lt;/b&gt;" in out and 'href="javascript' not in out
    assert linkify(None) == "—"


def test_flat_query_parsing() -> None:
    q = parse_rank_query(
        {
            "preset": "x",
            "params": "7B",
            "micro_batch_size": "8",
            "gpu_count": "2",
            "drop_oom": "true",
            "sort": "epoch_hours",
            "order": "-vcpus",
            "region": "",
        }
    )
    assert q.request.workload.params == 7_000_000_000
    assert q.request.workload.micro_batch_size == 8
    assert q.request.filters.gpu_count == 2 and q.request.drop_oom is True
    assert q.request.sort == "epoch_hours" and q.order == "-vcpus"
    assert "region" not in q.params and next(iter(q.params)) == "preset"
    with pytest.raises(ParamError) as err:
        parse_rank_query({"micro_batch_size": "0", "limit": "x", "order": "nope", "what": "1"})
    assert {k for k, _ in err.value.errors} == {"micro_batch_size", "limit", "order", "what"}
    # whitespace around a value is refused, as for every query parameter (not stripped)
    with pytest.raises(ParamError) as err:
        parse_rank_query({"preset": "x", "micro_batch_size": " 8 ", "gpu": "A100 "})
    assert err.value.errors == [
        ("micro_batch_size", "must not begin or end with whitespace"),
        ("gpu", "must not begin or end with whitespace"),
    ]
    assert parse_offer_query({}).workload is None
    assert parse_offer_query({"preset": "x", "currency": "CNY"}).currency == "CNY"
    assert parse_count("1,281,167") == "1281167" and parse_count("25.6M") == "25600000"
    assert parse_count("1.5") == "1.5" and parse_count("abc") is None


def test_order_rows_puts_missing_values_last() -> None:
    class Row:
        def __init__(self, vcpus: float | None) -> None:
            self.offer = type("O", (), {"vcpus": vcpus})()

    rows = [Row(8), Row(None), Row(32), Row(16)]
    ordered = order_rows(rows, "-vcpus")  # type: ignore[arg-type]
    assert [r.offer.vcpus for r in ordered] == [32, 16, 8, None]
    assert order_rows(rows, None) is rows  # type: ignore[arg-type]


def test_url_keeps_canonical_order_and_drops_removed() -> None:
    params = {"sort": "epoch_hours", "preset": "a b", "order": "-ram"}
    assert url("/", params) == "/?preset=a+b&sort=epoch_hours&order=-ram"
    assert url("/", params, order=None, limit="100") == "/?preset=a+b&sort=epoch_hours&limit=100"


def test_canonical_choices_writes_what_a_select_can_show() -> None:
    raw = {
        "base_dtype": "load_in_8bit",
        "precision": "bfloat16",
        "stack": "NeMo",
        "currency": "cny",
        "provider": "RunPod",
        "seq_len": "4k",
        "preset": "llama3-8b-lora",
    }
    assert canonical_choices(raw) == {
        "base_dtype": "int8",
        "precision": "bf16",
        "stack": "megatron",
        "currency": "CNY",
        "provider": "runpod",
        "seq_len": "4k",
        "preset": "llama3-8b-lora",
    }
    # refused words, whitespace (refused by the query rule) and non-ASCII stay as written,
    # so the error names the field and the box keeps what was typed
    kept = {"base_dtype": "int4", "precision": " bf16", "currency": "ｃｎｙ", "stack": ""}
    assert canonical_choices(kept) == kept
