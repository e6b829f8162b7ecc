"""The GPU catalog, the measurements and a GPU's page: filters, sortable columns, paging and
their JSON twins (``?format=json``), checked against the seed CSVs the database was loaded from.
"""

from __future__ import annotations

import csv
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from app.settings import PROJECT_ROOT
from tests.html_tree import Node
from tests.test_web import page as get_page
from tests.test_web import twin

pytestmark = pytest.mark.db

SEED = PROJECT_ROOT / "seed_data"


def seed_rows(name: str) -> list[dict[str, str]]:
    with (SEED / name).open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


GPUS = seed_rows("gpus.csv")
#: every benchmarks*.csv, as `gpucost seed` loads them
BENCHMARKS = [r for p in sorted(SEED.glob("benchmarks*.csv")) for r in seed_rows(p.name)]


def body_rows(doc: Node, table_id: str) -> list[Node]:
    return doc.find("table", id=table_id).find("tbody").find_all("tr")


def query(href: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(href).query).items()}


def test_catalog_sorts_by_a_column_both_ways(client: Any) -> None:
    doc = get_page(client, "/gpus", {"sort": "vram_gib", "order": "desc", "limit": "100"})
    assert doc.find("a", cls="json-twin").attrs["href"] == (
        "/gpus?sort=vram_gib&order=desc&limit=100&format=json"
    )
    data = twin(client, doc).json()
    names = [tr.find("strong").text for tr in body_rows(doc, "gpus-table")]
    assert names == [g["canonical_name"] for g in data["items"]]
    assert (data["sort"], data["order"], data["total"]) == ("vram_gib", "desc", len(GPUS))
    vram = [g["vram_gib"] for g in data["items"]]
    assert vram == sorted(vram, reverse=True)
    biggest = max(GPUS, key=lambda g: float(g["vram_gib"]))
    assert names[0] == biggest["canonical_name"]  # Instinct MI300X, 192 GiB in the seed
    # the sorted header says so and its link flips the direction, back to the first page
    th = doc.find("th", cls="c-vram_gib")
    assert th.attrs["aria-sort"] == "descending"
    assert query(th.find("a").attrs["href"]) == {"sort": "vram_gib", "order": "asc", "limit": "100"}
    up = client.get("/gpus", params={"sort": "vram_gib", "order": "asc", "format": "json"}).json()
    assert up["items"][0]["vram_gib"] == min(float(g["vram_gib"]) for g in GPUS)
    # another column's link starts with its natural direction: names A→Z, specs largest first
    assert query(doc.find("th", cls="c-canonical_name").find("a").attrs["href"])["order"] == "asc"
    assert query(doc.find("th", cls="c-bf16_tflops").find("a").attrs["href"])["order"] == "desc"
    by_name = client.get(
        "/gpus", params={"sort": "canonical_name", "limit": "100", "format": "json"}
    ).json()
    assert [g["canonical_name"] for g in by_name["items"]] == sorted(
        (g["canonical_name"] for g in GPUS), key=str.lower
    )


def test_catalog_sort_puts_unknown_values_last(client: Any) -> None:
    data = client.get(
        "/gpus", params={"sort": "fp8_tflops", "order": "desc", "limit": "100", "format": "json"}
    ).json()
    fp8 = [g["fp8_tflops"] for g in data["items"]]
    known = [v for v in fp8 if v is not None]
    assert known and len(known) < len(fp8)
    assert fp8[: len(known)] == sorted(known, reverse=True)
    assert len(known) == sum(1 for g in GPUS if g["fp8_tflops"])


def test_catalog_pages_with_counts(client: Any) -> None:
    doc = get_page(client, "/gpus", {"limit": "20", "offset": "20"})
    rows = body_rows(doc, "gpus-table")
    data = twin(client, doc).json()
    assert len(rows) == 20 and [int(tr.attrs["data-gpu-id"]) for tr in rows] == [
        g["id"] for g in data["items"]
    ]
    # catalog order is seed order: rows 21-40 of the CSV
    assert [g["canonical_name"] for g in data["items"]] == [
        g["canonical_name"] for g in GPUS[20:40]
    ]
    count = doc.find("p", id="count").text
    assert f"Showing 21–40 of {len(GPUS)}" in count and "page 2 of 5" in count
    pager = doc.find("nav", cls="pager")
    assert query(pager.find("a", rel="next").attrs["href"]) == {"limit": "20", "offset": "40"}
    assert query(pager.find("a", rel="prev").attrs["href"]) == {"limit": "20"}
    assert query(pager.find("a", rel="last").attrs["href"]) == {"limit": "20", "offset": "80"}
    page3 = client.get("/gpus", params={"limit": "20", "page": "3", "format": "json"}).json()
    assert page3["offset"] == 40
    assert [g["canonical_name"] for g in page3["items"]] == [
        g["canonical_name"] for g in GPUS[40:60]
    ]
    last = get_page(client, "/gpus", {"limit": "20", "offset": "80"})
    assert len(body_rows(last, "gpus-table")) == len(GPUS) - 80
    assert not last.find("nav", cls="pager").find_all("a", rel="next")
    past = get_page(client, "/gpus", {"limit": "20", "page": "99"})
    pages = -(-len(GPUS) // 20)
    assert (
        f"Page 99 is past the end: {len(GPUS)} GPU models in {pages} pages."
        in past.find("p", id="count").text
    )
    assert query(past.find("nav", cls="pager").find("a", rel="prev").attrs["href"]) == {
        "limit": "20",
        "offset": str((pages - 1) * 20),
    }


def test_catalog_filters(client: Any) -> None:
    a100 = client.get("/gpus", params={"family": "A100", "format": "json"}).json()
    want = [g["canonical_name"] for g in GPUS if g["canonical_name"].startswith("A100 ")]
    assert len(want) == 4 and [g["canonical_name"] for g in a100["items"]] == want
    assert {g["family"] for g in a100["items"]} == {"A100"}
    amd = client.get("/gpus", params={"vendor": "amd", "format": "json"}).json()
    assert amd["total"] == sum(1 for g in GPUS if g["vendor"] == "AMD") > 0
    hopper = client.get("/gpus", params={"architecture": "Hopper", "format": "json"}).json()
    assert hopper["total"] == sum(1 for g in GPUS if g["architecture"] == "Hopper")
    mid = client.get(
        "/gpus", params={"min_vram_gib": "40", "max_vram_gib": "80", "format": "json"}
    ).json()
    assert mid["total"] == sum(1 for g in GPUS if 40 <= float(g["vram_gib"]) <= 80) > 0
    assert all(40 <= g["vram_gib"] <= 80 for g in mid["items"])
    # the filters survive sorting: header links keep them
    doc = get_page(client, "/gpus", {"vendor": "NVIDIA", "min_vram_gib": "80"})
    href = doc.find("th", cls="c-fp8_tflops").find("a").attrs["href"]
    assert query(href) == {
        "vendor": "NVIDIA",
        "min_vram_gib": "80",
        "sort": "fp8_tflops",
        "order": "desc",
    }


@pytest.mark.parametrize(
    ("path", "field", "written", "option"),
    [
        ("/gpus", "vendor", "nvidia", "NVIDIA"),
        ("/gpus", "architecture", "hopper", "Hopper"),
        ("/benchmarks", "workload", "ResNet50-ImageNet", "resnet50-imagenet"),
        ("/benchmarks", "workload", "resnet-50 v1.5", "ResNet-50 v1.5"),
        ("/benchmarks", "precision", "FP16_AMP", "fp16_amp"),
        ("/benchmarks", "source", "TorchTune", "torchtune"),
    ],
)
def test_a_listing_select_shows_the_option_written_in_another_case(
    client: Any, path: str, field: str, written: str, option: str
) -> None:
    # the select shows the option the rows were filtered by, so the next submit keeps it
    # (it showed "any", and the filter was dropped), and the rows are the option's own
    doc = get_page(client, path, {field: written})
    chosen = doc.find("select", id=f"f-{field}").find_all("option")
    assert [o.attrs["value"] for o in chosen if "selected" in o.attrs] == [option]
    got = client.get(path, params={field: written, "format": "json"}).json()
    want = client.get(path, params={field: option, "format": "json"}).json()
    assert got["total"] == want["total"] > 0
    assert got["items"] == want["items"]


def test_catalog_offer_counts_and_cheapest_price(client: Any) -> None:
    item = client.get("/gpus", params={"q": "H100 SXM 80GB", "format": "json"}).json()["items"]
    (h100,) = [g for g in item if g["canonical_name"] == "H100 SXM 80GB"]
    offers = client.get("/v1/offers", params={"gpu": "H100 SXM 80GB", "limit": "1000"}).json()[
        "items"
    ]
    assert h100["offers"] == len(offers) > 0
    rate = float(next(r["rate"] for r in seed_rows("currency_rates.csv") if r["quote"] == "CNY"))
    usd = [
        o["price_per_hour"] / o["gpu_count"] / (rate if o["currency"] == "CNY" else 1.0)
        for o in offers
        if o["price_per_hour"] is not None
    ]
    assert h100["min_price_per_gpu_hour_usd"] == pytest.approx(min(usd))


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"sort": "colour"}, "sort"),
        ({"order": "sideways"}, "order"),
        ({"offset": "-1"}, "offset"),
        ({"page": "-1"}, "page"),
        ({"page": "0"}, "page"),
        ({"limit": "0"}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"min_vram_gib": "lots"}, "min_vram_gib"),
        ({"family": "Z9000"}, "family"),
        ({"vendor": "Intel"}, "vendor"),
        ({"colour": "red"}, "colour"),
        ({"page": "2", "offset": "50"}, "page"),
    ],
)
def test_catalog_bad_parameters_are_400_naming_them(
    client: Any, params: dict[str, str], key: str
) -> None:
    doc = get_page(client, "/gpus", params, status=400)
    assert key in doc.find("div", cls="errors").text
    r = client.get("/gpus", params={**params, "format": "json"})
    assert r.status_code == 400 and r.headers["content-type"].startswith("application/json")
    assert key in {e["key"] for e in r.json()["extra"]}, r.json()


def test_catalog_names_every_bad_parameter_at_once(client: Any) -> None:
    r = client.get("/gpus", params={"sort": "x", "offset": "-5", "limit": "0", "format": "json"})
    assert r.status_code == 400
    assert {e["key"] for e in r.json()["extra"]} == {"sort", "offset", "limit"}


def test_benchmarks_sort_filter_and_page(client: Any) -> None:
    params = {"workload": "ResNet-50 v1.5", "sort": "throughput_per_gpu", "order": "desc"}
    doc = get_page(client, "/benchmarks", params)
    data = twin(client, doc).json()
    want = [b for b in BENCHMARKS if b["workload"] == "ResNet-50 v1.5"]
    assert data["total"] == len(want) > 50
    rows = body_rows(doc, "benchmarks-table")
    assert len(rows) == 50 and [int(tr.attrs["data-benchmark-id"]) for tr in rows] == [
        b["id"] for b in data["items"]
    ]
    per_gpu = [b["throughput_per_gpu"] for b in data["items"]]
    assert per_gpu == sorted(per_gpu, reverse=True)
    best = max(float(b["throughput_total"]) / int(b["gpu_count"]) for b in want)
    assert per_gpu[0] == pytest.approx(best)
    assert doc.find("th", cls="c-throughput_per_gpu").attrs["aria-sort"] == "descending"
    nxt = doc.find("nav", cls="pager").find("a", rel="next").attrs["href"]
    assert query(nxt) == {**params, "offset": "50"}
    second = client.get(nxt.replace("?", "?format=json&", 1)).json()
    assert second["offset"] == 50 and second["items"][0]["throughput_per_gpu"] <= per_gpu[-1]


@pytest.mark.parametrize(
    ("params", "keep"),
    [
        ({"precision": "bf16"}, lambda b: b["precision"] == "bf16"),
        ({"gpu_count": "8"}, lambda b: b["gpu_count"] == "8"),
        ({"source": "torchtune"}, lambda b: b["source"] == "torchtune"),
        (
            {"source": "lambda_pytorch_v2", "precision": "fp16_amp", "gpu_count": "1"},
            lambda b: (
                (b["source"], b["precision"], b["gpu_count"])
                == ("lambda_pytorch_v2", "fp16_amp", "1")
            ),
        ),
    ],
)
def test_benchmark_filters_match_the_seed(client: Any, params: dict[str, str], keep: Any) -> None:
    data = client.get("/benchmarks", params={**params, "limit": "500", "format": "json"}).json()
    assert data["total"] == sum(1 for b in BENCHMARKS if keep(b)) > 0
    for key, value in params.items():
        assert all(str(b[key]) == value for b in data["items"]), key


def test_benchmark_gpu_family_filter(client: Any) -> None:
    data = client.get(
        "/benchmarks", params={"gpu": "A100", "limit": "500", "sort": "gpu", "format": "json"}
    ).json()
    names = {b["gpu"] for b in data["items"]}
    assert len(names) > 1 and all(n.startswith("A100 ") for n in names), names
    gpus = [b["gpu"] for b in data["items"]]
    assert gpus == sorted(gpus)


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"sort": "speed"}, "sort"),
        ({"offset": "-50"}, "offset"),
        ({"page": "-1"}, "page"),
        ({"gpu_count": "0"}, "gpu_count"),
        ({"gpu_count": "two"}, "gpu_count"),
        ({"precision": "fp64"}, "precision"),
        ({"source": "mlperf-9"}, "source"),
        ({"gpu": "Z9000"}, "gpu"),
        ({"ids": "1,x"}, "ids"),
        ({"batch": "8"}, "batch"),
    ],
)
def test_benchmark_bad_parameters_are_400_naming_them(
    client: Any, params: dict[str, str], key: str
) -> None:
    doc = get_page(client, "/benchmarks", params, status=400)
    assert key in doc.find("div", cls="errors").text
    r = client.get("/benchmarks", params={**params, "format": "json"})
    assert r.status_code == 400 and key in {e["key"] for e in r.json()["extra"]}, r.text


def test_gpu_page_specs_offers_and_measurements(client: Any) -> None:
    seed = next(g for g in GPUS if g["canonical_name"] == "H100 SXM 80GB")
    doc = get_page(client, "/gpus/H100%20SXM%2080GB")
    assert doc.find("h1").text == "H100 SXM 80GB"
    facts = {
        dt.text: dd.text
        for dt, dd in zip(
            doc.find("section", id="specs").find_all("dt"),
            doc.find("section", id="specs").find_all("dd"),
            strict=True,
        )
    }
    assert facts["Memory"] == f"{float(seed['vram_gib']):g} GiB"
    assert facts["Memory bandwidth"] == f"{int(seed['memory_bandwidth_gbs']):,} GB/s"
    assert facts["Released"] == seed["release_year"]
    source_links = doc.find("section", id="provenance").find("dd", cls="source").find_all("a")
    assert source_links and all(a.attrs["href"].startswith("https://") for a in source_links)

    data = twin(client, doc).json()
    assert data["gpu"]["canonical_name"] == "H100 SXM 80GB"
    listed = client.get("/v1/offers", params={"gpu": "H100 SXM 80GB", "limit": "1000"}).json()[
        "items"
    ]
    rows = body_rows(doc, "offers-table")
    assert len(rows) == len(data["offers"]) == len(listed) > 0
    assert {int(tr.attrs["data-offer-id"]) for tr in rows} == {o["id"] for o in listed}
    usd = [o["price_per_gpu_hour_usd"] for o in data["offers"]]
    known = [u for u in usd if u is not None]
    assert known == sorted(known) and usd[: len(known)] == known
    first = data["offers"][0]
    assert first["price_per_gpu_hour"] == pytest.approx(
        first["price_per_hour"] / first["gpu_count"]
    )
    assert rows[0].find("td", cls="c-instance").find("a").attrs["href"] == f"/offers/{first['id']}"

    measured = sum(1 for b in BENCHMARKS if b["gpu"] == "H100 SXM 80GB")
    assert data["benchmarks"]["total"] == measured > 50
    table = body_rows(doc, "measurements-table")
    assert len(table) == len(data["benchmarks"]["items"]) == 50
    hrefs = {a.attrs.get("href") for a in doc.find_all("a")}
    assert "/benchmarks?gpu=H100%20SXM%2080GB" in hrefs  # all of them, sortable
    github = [a.attrs["href"] for tr in table for a in tr.find("td", cls="source").find_all("a")]
    assert github and all(h.startswith("https://github.com/") and "/blob/" in h for h in github)


def test_gpu_page_by_id_alias_and_unknown(client: Any) -> None:
    by_name = client.get("/gpus/A100%20SXM4%2080GB", params={"format": "json"}).json()
    by_id = client.get(f"/gpus/{by_name['gpu']['id']}", params={"format": "json"}).json()
    alias = client.get("/gpus/NVIDIA%20A100-SXM4-80GB", params={"format": "json"}).json()
    assert by_name == by_id == alias
    doc = get_page(client, "/gpus/A100%20SXM4%2080GB")
    family = [
        a.text
        for a in doc.find("section", id="provenance").find_all("a")
        if "/gpus/" in a.attrs["href"]
    ]
    assert sorted(family) == sorted(
        g["canonical_name"]
        for g in GPUS
        if g["canonical_name"].startswith("A100 ") and g["canonical_name"] != "A100 SXM4 80GB"
    )
    missing = get_page(client, "/gpus/Z9000", status=404)
    assert "Z9000" in missing.text
    r = client.get("/gpus/Z9000", params={"format": "json"})
    assert r.status_code == 404 and "Z9000" in r.json()["detail"]
    bad = client.get("/gpus/A100", params={"format": "xml"})
    assert bad.status_code == 400 and "format" in bad.text


def test_catalog_rows_link_their_gpu_page(client: Any) -> None:
    doc = get_page(client, "/gpus", {"limit": "100"})
    links = [
        tr.find("td", cls="c-canonical_name").find("a").attrs["href"]
        for tr in body_rows(doc, "gpus-table")
    ]
    assert len(links) == len(GPUS)
    for href in links[:5] + links[-5:]:
        assert client.get(href).status_code == 200, href


def test_every_family_shown_filters_exactly_its_members(client: Any) -> None:
    everything = client.get("/gpus", params={"limit": "500", "format": "json"}).json()["items"]
    families: dict[str, set[str]] = {}
    for g in everything:
        families.setdefault(g["family"], set()).add(g["canonical_name"])
    assert len(families["A100"]) == 4 and len(families) < len(everything)
    doc = get_page(client, "/gpus")
    offered = [o.attrs["value"] for o in doc.find("datalist", id="gpu-families").find_all("option")]
    assert set(offered) == set(families)
    for family, members in families.items():
        got = client.get("/gpus", params={"family": family, "limit": "500", "format": "json"})
        assert {g["canonical_name"] for g in got.json()["items"]} == members, family


def test_offer_page_links_its_gpu_page(client: Any) -> None:
    offer = client.get("/v1/offers", params={"gpu": "L40S", "limit": "1"}).json()["items"][0]
    doc = get_page(client, f"/offers/{offer['id']}")
    (href,) = [
        a.attrs["href"] for a in doc.find_all("a") if a.attrs.get("href", "").startswith("/gpus/")
    ]
    assert href == "/gpus/L40S"
    assert get_page(client, href).find("h1").text == "L40S"


def test_a_family_name_opens_the_catalog_filtered_by_it(client: Any) -> None:
    r = client.get("/gpus/A100", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/gpus?family=A100"
    r = client.get("/gpus/A100", params={"format": "json"}, follow_redirects=False)
    assert r.headers["location"] == "/gpus?family=A100&format=json"
    listed = client.get(r.headers["location"]).json()["items"]
    assert len(listed) == 4 and all(g["family"] == "A100" for g in listed)


def test_bad_values_stay_in_the_form_with_the_page_labels(client: Any) -> None:
    doc = get_page(client, "/gpus", {"min_vram_gib": "lots", "sort": "colour"}, status=400)
    box = doc.find("div", cls="errors")
    items = [li.text for li in box.find_all("li")]
    assert any(t.startswith("Min VRAM (GiB) min_vram_gib : must be a number") for t in items), items
    assert any(t.startswith("Sort column sort : unknown value 'colour'") for t in items), items
    field = doc.find("input", id="f-min_vram_gib")
    assert field.attrs["value"] == "lots" and field.attrs["aria-invalid"] == "true"
    assert not doc.find_all("table", id="gpus-table")  # nothing listed under a bad request
