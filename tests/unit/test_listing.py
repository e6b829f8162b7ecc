"""Listing pages' pure parts: query parsing, pager arithmetic, tick anchoring, source links."""

from __future__ import annotations

from app.services.catalog import Listing, gpu_family
from app.web.charts import Tick, fit_x_ticks
from app.web.format import short_sources, source_link
from app.web.listing import (
    BENCHMARK_PARAMS,
    CATALOG_PARAMS,
    Column,
    headers,
    pager,
    paging_params,
    parse_listing,
)

CATALOG = (*CATALOG_PARAMS, *paging_params(("id", "vram_gib", "canonical_name")))


def test_parse_listing_types_values_and_keeps_the_given_order() -> None:
    q = parse_listing({"limit": "20", "family": "A100", "min_vram_gib": "40.5"}, CATALOG)
    assert q.errors == []
    assert q.values == {"family": "A100", "min_vram_gib": 40.5, "limit": 20}
    assert list(q.params) == ["family", "min_vram_gib", "limit"]  # spec order
    assert (q.limit, q.offset, q.wants_json) == (20, 0, False)
    assert parse_listing({"page": "3", "limit": "20"}, CATALOG).offset == 40
    assert parse_listing({}, CATALOG).limit == 50


def test_parse_listing_refuses_whitespace_around_a_value() -> None:
    q = parse_listing({"family": " A100 ", "min_vram_gib": "40.5\n"}, CATALOG)
    assert q.errors == [
        ("family", "must not begin or end with whitespace"),
        ("min_vram_gib", "must not begin or end with whitespace"),
    ]
    assert q.values == {} and q.limit == 50


def test_parse_listing_names_every_bad_parameter() -> None:
    q = parse_listing(
        {
            "sort": "colour",
            "order": "up",
            "offset": "-1",
            "limit": "1e3",
            "min_vram_gib": "nan",
            "max_vram_gib": "-2",
            "batch": "8",
        },
        CATALOG,
    )
    reasons = dict(q.errors)
    assert set(reasons) == {
        "sort",
        "order",
        "offset",
        "limit",
        "min_vram_gib",
        "max_vram_gib",
        "batch",
    }
    assert reasons["offset"] == "must be at least 0"
    # the query-string rule of every GET endpoint (app.interface.query.query_text_error)
    assert reasons["limit"] == (
        "must be a whole number written as digits, e.g. 1000 (no _, +, spaces or exponent)"
    )
    assert reasons["min_vram_gib"] == "must be a number written as a decimal, e.g. 1.5, 40 or 2e-3"
    assert "unknown value 'colour'" in reasons["sort"] and "vram_gib" in reasons["sort"]
    assert reasons["batch"].startswith("unknown parameter")
    assert q.values == {}
    both = parse_listing({"page": "2", "offset": "10"}, CATALOG)
    assert [k for k, _ in both.errors] == ["page"]
    ids = parse_listing({"ids": "1,2,x"}, (*BENCHMARK_PARAMS, *paging_params(("id",))))
    assert [k for k, _ in ids.errors] == ["ids"]
    assert parse_listing({"q": "x" * 201}, CATALOG).errors == [("q", "at most 200 characters")]


def _listing(total: int, limit: int, offset: int) -> Listing:
    shown = max(0, min(limit, total - offset))
    return Listing([{"id": i} for i in range(shown)], total, limit, offset, "id", False)


def test_pager_counts_and_links() -> None:
    p = pager("/gpus", {"vendor": "AMD", "limit": "20", "offset": "20"}, _listing(81, 20, 20))
    assert (p["first"], p["last"], p["total"], p["page"], p["pages"]) == (21, 40, 81, 2, 5)
    assert p["prev_url"] == p["first_url"] == "/gpus?vendor=AMD&limit=20"
    assert p["next_url"] == "/gpus?vendor=AMD&limit=20&offset=40"
    assert p["last_url"] == "/gpus?vendor=AMD&limit=20&offset=80"
    end = pager("/gpus", {"limit": "20"}, _listing(81, 20, 80))
    assert (end["first"], end["last"], end["next_url"], end["last_url"]) == (81, 81, None, None)
    empty = pager("/gpus", {}, _listing(0, 50, 0))
    assert (empty["first"], empty["last"], empty["pages"], empty["next_url"]) == (0, 0, 1, None)
    # ?page=99 of 82 GPUs in 2 pages: nothing shown, "previous" goes to the last page (offset 50)
    past = pager("/gpus", {"page": "99"}, _listing(82, 50, 4900))
    assert (past["first"], past["last"], past["past_end"], past["pages"]) == (0, 0, True, 2)
    assert past["prev_url"] == "/gpus?offset=50" and past["next_url"] is None
    assert not end["past_end"] and not empty["past_end"]


def test_headers_flip_the_sorted_column_and_drop_the_page() -> None:
    cols = (
        Column("vram_gib", "VRAM", numeric=True),
        Column("canonical_name", "GPU"),
        Column(None, "Source"),
    )
    params = {"vendor": "AMD", "sort": "vram_gib", "order": "desc", "offset": "50"}
    listing = Listing([], 0, 50, 50, "vram_gib", True)
    vram, name, source = headers("/gpus", params, cols, listing, {"vram_gib": True})
    assert vram["direction"] == "descending"
    assert vram["href"] == "/gpus?vendor=AMD&sort=vram_gib&order=asc"
    assert (
        name["direction"] is None
        and name["href"] == "/gpus?vendor=AMD&sort=canonical_name&order=asc"
    )
    assert source["href"] is None


def test_x_tick_labels_near_the_right_edge_end_at_their_tick() -> None:
    ticks = [Tick(78, "0"), Tick(500, "10 h"), Tick(944, "20 h"), Tick(900, "2026-11-29")]
    fitted = fit_x_ticks(ticks, 960)
    # "20 h": 4 characters × 13.2 / 2 = 26.4 units past 944 > 960; "2026-11-29" at 900: 66
    assert [t.anchor for t in fitted] == ["middle", "middle", "end", "end"]
    assert [(t.pos, t.label) for t in fitted] == [(t.pos, t.label) for t in ticks]


def test_source_link_points_at_the_cited_file() -> None:
    html = str(source_link("karpathy/llm.c@f1e2ace6:scripts/run_gpt3_125M.sh (header comment)"))
    assert 'href="https://github.com/karpathy/llm.c/blob/f1e2ace6/scripts/run_gpt3_125M.sh"' in html
    assert "<small>(header comment)</small>" in html
    plain = str(source_link("see https://example.com/x and <b>"))
    assert 'href="https://example.com/x"' in plain and "&lt;b&gt;" in plain


def test_short_sources_names_hosts() -> None:
    html = str(short_sources("github a/b:c.md ; https://www.techpowerup.com/gpu-specs/x.c1 (TPU)"))
    assert (
        ">techpowerup.com</a>" in html
        and 'href="https://www.techpowerup.com/gpu-specs/x.c1"' in html
    )
    assert "github a/b:c.md" in html


def test_gpu_family_drops_size_form_and_memory_words() -> None:
    assert gpu_family("A100 SXM4 80GB") == "A100"
    assert gpu_family("H100 SXM 96GB HBM2e (500 W)") == "H100"
    assert gpu_family("H200 NVL 141GB") == "H200 NVL"
    assert gpu_family("GeForce RTX 4060 Ti 16GB") == "GeForce RTX 4060 Ti"
    assert gpu_family("Instinct MI300X") == "Instinct MI300X"
