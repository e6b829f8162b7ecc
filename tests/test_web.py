"""Web pages through the test client: each page shows the data of its JSON twin."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from app.interface.query import RANK_PARAMS
from app.web.format import money_range
from app.web.forms import all_form_fields
from tests.html_tree import Node, parse

pytestmark = pytest.mark.db


def page(client: Any, path: str, params: dict[str, str] | None = None, status: int = 200) -> Node:
    r = client.get(path, params=params)
    assert r.status_code == status, r.text[:2000]
    assert r.headers["content-type"].startswith("text/html")
    assert "Traceback" not in r.text
    return parse(r.text)


def twin(client: Any, doc: Node) -> Any:
    href = doc.find("a", cls="json-twin").attrs["href"]
    assert doc.find("link", rel="alternate").attrs["href"] == href
    return client.get(href)


def results(doc: Node, part: str) -> Node:
    return doc.find("table", id="results-table").find(part)


def row_ids(doc: Node) -> list[int]:
    table = doc.find("table", id="results-table")
    return [
        int(tr.attrs["data-offer-id"]) for tr in table.find_all("tr") if "data-offer-id" in tr.attrs
    ]


def test_form_covers_every_flat_parameter() -> None:
    assert {f.name for f in all_form_fields()} | {"preset", "order"} == set(RANK_PARAMS)


def test_index_without_parameters_shows_the_form(client: Any) -> None:
    doc = page(client, "/")
    assert doc.find("meta", name="viewport")
    picker = doc.find("fieldset", id="f-preset")
    presets = [i.attrs["value"] for i in picker.find_all("input", type="radio")]
    assert "resnet50-imagenet" in presets and "llama3-8b-qlora" in presets
    # grouped by kind, each with a short name and its recipe below
    kinds = [g.attrs["data-kind"] for g in picker.find_all("div", cls="pick-group")]
    assert kinds[:3] == ["llm_finetune", "llm_pretrain", "vision"]
    (qlora,) = [
        x for x in picker.find_all("label", cls="pick") if x.find_all(id="preset-llama3-8b-qlora")
    ]
    assert qlora.find("span", cls="pick-name").text == "Llama 3.1 8B QLoRA fine-tune"
    assert "torchtune" in qlora.find("span", cls="pick-sub").text
    assert not doc.find_all("table", id="results-table")
    # no job yet: the JSON button gives what the page offers, the presets of its picker (a
    # 200, not /v1/rank's 400 for a missing workload)
    assert doc.find("a", cls="json-twin").attrs["href"] == "/v1/workloads"
    r = twin(client, doc)
    assert r.status_code == 200
    assert {p["preset"] for p in r.json()} == set(presets) - {""}  # "": describe the model
    # the same in Chinese, and for a form sent with every box left empty
    for params in ({"lang": "zh-CN"}, {"preset": "", "params": "", "gpu": ""}):
        doc = page(client, "/", params)
        assert doc.find("a", cls="json-twin").attrs["href"] == "/v1/workloads"
    # advanced fields are folded away, filters are there
    assert doc.find("input", id="f-layers")
    assert "open" not in doc.find("details", cls="advanced").attrs
    for name in (
        "gpu",
        "gpu_count",
        "provider",
        "region",
        "billing",
        "max_price_per_hour",
        "currency",
    ):
        assert doc.find_all(id=f"f-{name}"), name


def test_index_with_preset_shows_the_ranking_of_its_json_twin(client: Any) -> None:
    doc = page(client, "/", {"preset": "resnet50-imagenet"})
    r = twin(client, doc)
    assert r.status_code == 200
    assert (
        urlsplit(doc.find("a", cls="json-twin").attrs["href"]).query == "preset=resnet50-imagenet"
    )
    data = r.json()
    assert row_ids(doc) == [x["offer"]["id"] for x in data["results"]]
    assert len(row_ids(doc)) == 50
    rows = results(doc, "tbody").find_all("tr")
    first = data["results"][0]
    cells = rows[0].find_all("td")
    assert len(cells) == len(results(doc, "thead").find_all("th")) == 15
    # an image workload counts images; every cell names its column for the phone cards
    assert "Images/s" in results(doc, "thead").text
    assert all(c.attrs.get("data-label") for c in cells)
    assert first["offer"]["instance_type"] in rows[0].text
    assert rows[0].find("td", cls="cost").text.startswith("$")
    assert "measured" in rows[0].text and re.search(r"\d+ min", rows[0].text)
    # the fields hold the preset's values (not faint placeholders); unchanged, they are no
    # override: the JSON twin above carries the preset alone
    box = doc.find("input", id="f-micro_batch_size")
    assert box.attrs["value"] == box.attrs["data-default"] == "256"
    assert doc.find("input", id="f-params").attrs["value"] == "25.6M"
    # the hardware people scan are columns of their own (shown on wide screens)
    for key in ("vcpus", "ram", "disk", "max_cuda", "nvlink"):
        assert "hw" in results(doc, "thead").find("th", cls=f"c-{key}").classes
    # totals carry their range, as the API computes it
    total = rows[0].find("td", cls="c-total_cost").find("small").text
    lo, hi = first["estimate"]["total_cost_low"], first["estimate"]["total_cost_high"]
    assert lo < first["estimate"]["total_cost"] < hi
    assert total == money_range(lo, hi, "USD")
    # one chart point per offer with a cost (table rows + frontier beyond them)
    points = doc.find("svg", cls="scatter").find_all("circle", cls="pt")
    costed = [
        x["offer"]["id"]
        for x in [*data["results"], *data["frontier"]]
        if x["estimate"]["cost_per_epoch"] is not None
    ]
    assert sorted(int(p.attrs["data-offer-id"]) for p in points) == sorted(costed)
    assert all(p.find("title").text for p in points)
    frontier = [p for p in points if "frontier" in p.classes]
    assert len(frontier) == sum(x["pareto_optimal"] for x in [*data["results"], *data["frontier"]])
    assert doc.find("polyline", cls="frontier-line")
    # each point links to its offer page with the workload
    link = doc.find("svg", cls="scatter").find("a")
    assert re.fullmatch(r"/offers/\d+\?preset=resnet50-imagenet", link.attrs["href"])


def test_sequence_length_box_takes_4k_as_4096(client: Any) -> None:
    # the preset's 2048 shows as typed (no 2.05K), in a text box a phone can type "k" in
    doc = page(client, "/", {"preset": "llama3-8b-lora"})
    box = doc.find("input", id="f-seq_len")
    assert box.attrs["value"] == box.attrs["data-default"] == "2048"
    assert box.attrs["inputmode"] == "text" and box.attrs["placeholder"] == "e.g. 4k, 2048"
    doc = page(client, "/", {"preset": "llama3-8b-lora", "seq_len": "4k"})
    assert doc.find("input", id="f-seq_len").attrs["value"] == "4k"
    r = twin(client, doc)
    assert r.status_code == 200, r.text
    # k is 1024 in a sequence length: the job is 4096 tokens, as if written 4096
    assert r.json()["workload"]["seq_len"] == 4096
    spelled = client.get("/v1/rank", params={"preset": "llama3-8b-lora", "seq_len": "4096"})
    assert row_ids(doc) == [x["offer"]["id"] for x in spelled.json()["results"]]


def selected(doc: Node, name: str) -> list[str]:
    """The values of the options the page's ``name`` select shows as chosen."""
    options = doc.find("select", id=f"f-{name}").find_all("option")
    return [o.attrs["value"] for o in options if "selected" in o.attrs]


@pytest.mark.parametrize(
    ("field", "written", "option"),
    [
        # bitsandbytes LLM.int8 as people write it (transformers' load_in_8bit=True)
        ("base_dtype", "8bit", "int8"),
        ("base_dtype", "load_in_8bit", "int8"),
        ("base_dtype", "LLM.int8", "int8"),
        ("base_dtype", "torch.float32", "fp32"),
        # torch_dtype=torch.bfloat16: pure bf16
        ("precision", "bfloat16", "bf16"),
        ("precision", "BF16-AMP", "bf16_amp"),
        # the names of app/model/stacks.py STACK_ALIASES (Composer runs llm-foundry)
        ("stack", "composer", "llm_foundry"),
        ("stack", "HF Trainer", "hf_trainer"),
        # Hugging Face's TrainingArguments.optim and attn_implementation words
        ("optimizer", "adamw_torch", "adamw"),
        ("attention", "flash_attention_2", "sdpa"),
    ],
)
def test_a_select_shows_the_choice_an_alias_stands_for(
    client: Any, field: str, written: str, option: str
) -> None:
    # the page answers the alias; its select must show that choice, or the next "Rank
    # offers" would send the empty "default" and silently go back to the preset's value
    asked = {"preset": "llama3-8b-lora", "gpu": "RTX 4090", field: written}
    doc = page(client, "/", asked)
    assert selected(doc, field) == [option]
    data = twin(client, doc).json()
    assert data["workload"][field] == option
    # the form submitted as shown asks the same job: every row the same
    again = page(client, "/", {**asked, field: option})
    assert selected(again, field) == [option]
    assert row_ids(again) == row_ids(doc)
    assert twin(client, again).json()["results"] == data["results"]


@pytest.mark.parametrize(
    ("field", "written", "option"),
    [
        ("currency", "cny", "CNY"),
        ("currency", "Eur", "EUR"),
        ("provider", "Lambda", "lambda"),
        # a provider's name as people write it: the API reads it as the slug it names
        ("provider", "Vast.ai", "vast"),
        ("provider", "DataCrunch", "verda"),
    ],
)
def test_a_filter_select_shows_the_choice_written_in_another_case(
    client: Any, field: str, written: str, option: str
) -> None:
    # the API reads a currency in any case and a provider slug case-blind; the select must
    # show that choice (a currency select has no empty option: it showed its first one, and
    # the next submit changed the currency)
    asked = {"preset": "resnet50-imagenet", field: written}
    doc = page(client, "/", asked)
    assert selected(doc, field) == [option]
    data = twin(client, doc).json()
    again = page(client, "/", {**asked, field: option})
    assert row_ids(again) == row_ids(doc)
    assert twin(client, again).json()["results"] == data["results"]
    if field == "currency":
        assert data["currency"] == option
    else:
        assert {x["offer"]["provider"] for x in data["results"]} == {option}


def test_frontier_offers_below_the_table_are_plotted(client: Any) -> None:
    doc = page(client, "/", {"preset": "resnet50-imagenet", "limit": "3"})
    data = twin(client, doc).json()
    assert data["frontier"]
    extra = doc.find("svg", cls="scatter").find_all("circle", cls="extra")
    assert {int(p.attrs["data-offer-id"]) for p in extra} == {
        x["offer"]["id"] for x in data["frontier"]
    }
    assert "Also on the Pareto frontier" in doc.find("p", cls="frontier-extra").text


def test_filters_currency_and_form_state_round_trip(client: Any) -> None:
    params = {
        "preset": "llama3-8b-qlora",
        "micro_batch_size": "4",
        "gpu": "RTX 4090",
        "gpu_count": "1",
        "billing": "on_demand",
        "max_price_per_hour": "20",
        "currency": "CNY",
        "limit": "10",
    }
    doc = page(client, "/", params)
    data = twin(client, doc).json()
    assert data["results"] and data["currency"] == "CNY"
    assert all(x["offer"]["gpu"] == "GeForce RTX 4090" for x in data["results"])
    assert row_ids(doc) == [x["offer"]["id"] for x in data["results"]]
    assert doc.find("input", id="f-micro_batch_size").attrs["value"] == "4"
    assert doc.find("input", id="f-gpu").attrs["value"] == "RTX 4090"
    currency = doc.find("select", id="f-currency")
    assert [o.attrs["value"] for o in currency.find_all("option") if "selected" in o.attrs] == [
        "CNY"
    ]
    assert "CN¥" in doc.find("table", id="results-table").find("td", cls="cost").text
    # the form folds into a one-line recap of what was asked
    recap = doc.find("summary", cls="recap").text
    assert "Micro-batch per GPU 4" in recap and "GPU RTX 4090" in recap and "CNY" in recap
    # the twin link carries exactly the form state
    href = doc.find("a", cls="json-twin").attrs["href"]
    assert dict(parse_qsl(urlsplit(href).query)) == params


def test_column_headers_sort_server_side(client: Any) -> None:
    base = {"preset": "bert-base-squad", "limit": "40"}
    doc = page(client, "/", base)
    heads = {a.attrs["data-sort"]: a for a in results(doc, "thead").find_all("a")}
    heads |= {a.attrs["data-sort"]: a for a in doc.find("span", cls="more-orders").find_all("a")}
    cost_th = results(doc, "thead").find("th", cls="c-cost_per_epoch")
    assert cost_th.attrs.get("aria-sort") == "ascending"
    assert (
        heads["epoch_hours"]
        .attrs["href"]
        .startswith("/?preset=bert-base-squad&sort=epoch_hours&limit=40")
    )
    by_time = page(client, heads["epoch_hours"].attrs["href"].split("#")[0])
    data = twin(client, by_time).json()
    hours = [
        x["estimate"]["epoch_hours"] for x in data["results"] if x["estimate"]["oom_risk"] != "high"
    ]
    assert hours == sorted(hours) and row_ids(by_time) == [
        x["offer"]["id"] for x in data["results"]
    ]
    # a non-ranking column re-orders the shown rows; clicking again flips the direction
    vcpus_href = heads["vcpus"].attrs["href"].split("#")[0]
    assert "order=-vcpus" in vcpus_href
    by_vcpus = page(client, vcpus_href)
    data = twin(client, by_vcpus).json()
    assert row_ids(by_vcpus) == [x["offer"]["id"] for x in data["results"]]
    values = [x["offer"]["vcpus"] for x in data["results"] if x["offer"]["vcpus"] is not None]
    assert values == sorted(values, reverse=True)
    flipped = {a.attrs["data-sort"]: a for a in results(by_vcpus, "thead").find_all("a")}
    assert "order=vcpus" in flipped["vcpus"].attrs["href"]
    provider_sorted = page(client, "/", {**base, "order": "provider"})
    names = [
        tr.find_all("td")[1].find("span", cls="provider").text.lower()
        for tr in results(provider_sorted, "tbody").find_all("tr")
    ]
    assert names == sorted(names)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"preset": "resnet50-imagenet", "micro_batch_size": "-4"}, "micro_batch_size"),
        ({"preset": "resnet50-imagenet", "micro_batch_size": "lots"}, "micro_batch_size"),
        ({"preset": "resnet50-imagenet", "params": "big"}, "params"),
        ({"preset": "llama3-8b-lora", "seq_len": "long"}, "seq_len"),
        ({"preset": "llama3-8b-lora", "seq_len": "4.1k"}, "seq_len"),
        ({"preset": "nope"}, "preset"),
        ({"preset": "resnet50-imagenet", "gpu": "Z9000"}, "gpu"),
        ({"preset": "resnet50-imagenet", "currency": "JPY"}, "currency"),
        ({"preset": "resnet50-imagenet", "max_price_per_hour": "-1"}, "max_price_per_hour"),
        ({"preset": "resnet50-imagenet", "sort": "cheapest"}, "sort"),
        ({"preset": "resnet50-imagenet", "layers": "0"}, "layers"),
        ({"architecture": "cnn"}, "params"),
        ({"preset": "resnet50-imagenet", "colour": "red"}, "colour"),
    ],
)
def test_bad_input_shows_a_message_naming_the_field(client: Any, params: dict, field: str) -> None:
    doc = page(client, "/", params, status=400)
    box = doc.find("div", cls="errors")
    assert field in box.text
    assert not doc.find_all("table", id="results-table")
    # the form keeps what was typed, and marks the field
    for k, v in params.items():
        if doc.find_all(id=f"f-{k}") and doc.find(id=f"f-{k}").tag == "input":
            assert doc.find(id=f"f-{k}").attrs["value"] == v
    if doc.find_all(id=f"f-{field}"):
        assert doc.find(id=f"f-{field}").attrs.get("aria-invalid") == "true"
    # the JSON twin answers the same request with a 400 naming the field
    r = twin(client, doc)
    assert r.status_code == 400
    assert field in {e["key"] for e in r.json()["extra"]}


def test_offer_page_explains_the_estimate(client: Any) -> None:
    params = {"preset": "resnet50-imagenet", "currency": "CNY"}
    ranked = client.get("/v1/rank", params={**params, "limit": 1}).json()["results"][0]
    offer_id = ranked["offer"]["id"]
    doc = page(client, f"/offers/{offer_id}", params)
    r = twin(client, doc)
    assert r.status_code == 200
    data = r.json()
    assert urlsplit(doc.find("a", cls="json-twin").attrs["href"]).path == f"/v1/offers/{offer_id}"
    assert ranked["offer"]["instance_type"] in doc.find("h1").text
    e = data["estimate"]
    assert e["cost_per_epoch"] == pytest.approx(ranked["estimate"]["cost_per_epoch"])
    # memory by component against usable VRAM
    memory = doc.find("section", id="memory")
    assert len(memory.find("div", cls="membar").find_all("span", cls="seg")) == 5
    assert "usable" in memory.find("div", cls="membar").text
    table = memory.find("table", cls="memory").text
    for part in ("Weights", "Gradients", "Optimizer state", "Activations"):
        assert part in table
    # throughput basis and the measurements used, with sources
    tp = doc.find("section", id="throughput")
    assert e["basis"] in tp.find("span", cls=f"basis-{e['basis']}").attrs["class"]
    evidence = tp.find("table", cls="evidence").find("tbody").find_all("tr")
    assert len(evidence) == len(e["evidence"]) >= 1
    first_id = e["evidence"][0]["benchmark_id"]
    assert evidence[0].find("a").attrs["href"] == f"/benchmarks?ids={first_id}"
    assert e["evidence"][0]["source_ref"].split()[0][:20] in evidence[0].text
    # price history
    prices = doc.find("section", id="prices")
    assert prices.find("svg", cls="timeline")
    assert len(prices.find("table", cls="history").find("tbody").find_all("tr")) == len(
        data["price_history"]
    )
    # back to the ranking with the same workload
    assert (
        doc.find("p", cls="crumbs")
        .find("a")
        .attrs["href"]
        .startswith("/?preset=resnet50-imagenet&currency=CNY")
    )


def test_offer_page_says_where_the_multi_gpu_scaling_comes_from(client: Any) -> None:
    params = {"preset": "bert-base-squad", "min_gpu_count": "2"}
    ranked = client.get("/v1/rank", params={**params, "limit": 1}).json()["results"][0]
    doc = page(client, f"/offers/{ranked['offer']['id']}", {"preset": "bert-base-squad"})
    e = twin(client, doc).json()["estimate"]
    assert e["multi_gpu_basis"] in ("measured", "model")
    words = "measured on this GPU count" if e["multi_gpu_basis"] == "measured" else "link model"
    terms = [n for n in doc.iter() if n.tag in ("dt", "dd")]
    (i,) = [k for k, n in enumerate(terms) if n.tag == "dt" and n.text == "Multi-GPU efficiency"]
    assert terms[i + 1].text.startswith(f"{round(e['multi_gpu_efficiency'] * 100)}% ({words})")
    # the link the answer scaled over, the bytes each GPU moves per step, the waiting share
    link = doc.find("small", id="multi-gpu-link").text
    gb = e["multi_gpu"]["bytes_per_step"] / 1e9
    assert link.startswith(f"link {e['multi_gpu']['link_class']}: "), link
    assert f"{gb:.3g}"[:3] in link and "of the step communicating" in link, link


def test_offer_page_lists_what_would_make_it_fit(client: Any) -> None:
    params = {"preset": "llama3-8b-full", "sharding": "none", "gpu": "RTX 4090"}
    ranked = client.get("/v1/rank", params={**params, "limit": 1}).json()["results"]
    if not ranked:
        pytest.skip("no RTX 4090 offer seeded")
    offer_id = ranked[0]["offer"]["id"]
    doc = page(client, f"/offers/{offer_id}", {"preset": "llama3-8b-full", "sharding": "none"})
    data = twin(client, doc).json()["estimate"]
    assert data["oom_risk"] == "high" and data["memory_fixes"]
    items = doc.find("ul", cls="memory-fixes").find_all("li")
    assert len(items) == len(data["memory_fixes"])
    assert data["memory_fixes"][0]["label"] in items[0].text


def test_offer_page_without_workload_errors_and_missing(client: Any) -> None:
    offer_id = client.get("/v1/offers", params={"limit": 1}).json()["items"][0]["id"]
    doc = page(client, f"/offers/{offer_id}")
    assert "Pick a workload" in doc.text
    assert not doc.find_all("section", id="memory")
    bad = page(
        client,
        f"/offers/{offer_id}",
        {"preset": "resnet50-imagenet", "currency": "JPY"},
        status=400,
    )
    assert "currency" in bad.find("div", cls="errors").text
    assert bad.find("h1").text  # the offer itself still shows
    missing = page(client, "/offers/99999999", status=404)
    assert "99999999" in missing.text


def test_gpu_catalog_search(client: Any) -> None:
    doc = page(client, "/gpus", {"q": "h100"})
    rows = doc.find("table", cls="catalog").find("tbody").find_all("tr")
    r = twin(client, doc)
    names = [g["canonical_name"] for g in r.json()["items"]]
    assert names and len(rows) == len(names) == r.json()["total"]
    assert [tr.find("strong").text for tr in rows] == names
    assert all("h100" in n.lower() for n in names)
    everything = page(client, "/gpus", {"limit": "100"})
    rows_all = everything.find("table", cls="catalog").find("tbody").find_all("tr")
    assert len(rows_all) == 82  # 81 from ../shared plus the B300 of gpus_manual.csv
    sources = [td for td in everything.find_all("td", cls="source") if td.find_all("a")]
    assert sources and all(
        a.attrs["href"].startswith(("https://", "http://"))
        for td in sources
        for a in td.find_all("a")
    )


def test_benchmarks_search_and_errors(client: Any) -> None:
    doc = page(client, "/benchmarks", {"gpu": "RTX 3090", "workload": "resnet50-imagenet"})
    data = twin(client, doc).json()
    rows = doc.find("table", cls="benchmarks").find("tbody").find_all("tr")
    assert data["total"] == len(rows) > 0
    assert [int(tr.find("td").text) for tr in rows] == [b["id"] for b in data["items"]]
    assert all(b["gpu"] == "GeForce RTX 3090" for b in data["items"])
    one = page(client, "/benchmarks", {"ids": str(data["items"][0]["id"])})
    assert len(one.find("table", cls="benchmarks").find("tbody").find_all("tr")) == 1
    paged = page(client, "/benchmarks", {"limit": "100"})
    assert (
        paged.find("nav", cls="pager").find("a", rel="next").attrs["href"]
        == "/benchmarks?limit=100&offset=100"
    )
    bad = page(client, "/benchmarks", {"gpu": "Z9000"}, status=400)
    assert "gpu" in bad.find("div", cls="errors").text
    assert twin(client, bad).status_code == 400


def test_pages_load_nothing_from_the_internet(client: Any) -> None:
    for path in ("/", "/?preset=bert-base-squad", "/gpus", "/benchmarks?limit=20"):
        doc = page(client, path)
        for n in doc.find_all("script") + doc.find_all("link") + doc.find_all("img"):
            ref = n.attrs.get("src") or n.attrs.get("href") or ""
            assert not ref or ref.startswith("/"), (path, ref)
    for asset, kind in (("gpucost.css", "text/css"), ("gpucost.js", "javascript")):
        href = page(client, "/").find_all(
            "link" if asset.endswith("css") else "script",
            **({"rel": "stylesheet"} if asset.endswith("css") else {}),
        )[0]
        url = href.attrs.get("href") or href.attrs["src"]
        r = client.get(url)
        assert r.status_code == 200 and kind in r.headers["content-type"], asset
        assert "http://" not in r.text and "https://" not in r.text


def test_banner_lists_every_provider_as_seed_data(client: Any) -> None:
    doc = page(client, "/gpus")
    banner = doc.find("section", cls="banner")
    assert "from seed data" in banner.find("summary").text
    rows = banner.find("table", cls="freshness").find("tbody").find_all("tr")
    assert len(rows) >= 19
    assert any("seed data, seen 20" in tr.text for tr in rows)
    assert not banner.find_all("p", cls="stale")


def test_malformed_page_parameters_render_html_errors(client: Any) -> None:
    for path in ("/benchmarks?ids=abc", "/benchmarks?limit=0", "/offers/1?params=0"):
        r = client.get(path)
        assert r.status_code == 400, path
        assert r.headers["content-type"].startswith("text/html"), path
        assert "Traceback" not in r.text
    assert "ids" in parse(client.get("/benchmarks?ids=abc").text).find("div", cls="errors").text
