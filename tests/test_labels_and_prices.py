"""Labels that tell the truth, prices with an age and a kind, rates with a date (issue 22).

On the seeded database: a ``measured`` answer is the mean of the GPU's measurements at the
served configuration; no old or undated price ranks above a fresh dated one of the same GPU
and count, and nothing unbookable above a bookable offer, unless asked; the fresh install's
price ages are the README's; every offer's source can be opened; converted answers carry
their exchange rates with dates.
"""

from __future__ import annotations

import csv
import datetime as dt
import re
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.model.pooled import suite_of
from app.model.rank import CandidateColumns, rank_columns
from app.model.run_warnings import CANNOT_RUN
from app.price_age import AGE_TIERS_DAYS, tier
from app.settings import PROJECT_ROOT

pytestmark = pytest.mark.db

README = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")


def _ref(client: Any) -> Any:
    return client.app.state.reference.get()


def test_a_measured_answer_is_its_measurement_and_a_moved_one_says_so(client: Any) -> None:
    """Every preset on every GPU that measured it, one GPU: ``measured`` exactly when the GPU
    has 1-GPU rows at the served software level, precision and micro-batch, and then the
    answer is their mean."""
    from app.services.estimates import config_estimates
    from app.services.workloads import WorkloadError, resolve_workload

    ref = _ref(client)
    seen = {"measured": 0, "measured_rescaled": 0}
    for slug, preset in ref.presets.items():
        if not preset.benchmark_workloads:
            continue
        try:
            w, reference, _ = resolve_workload({"preset": slug}, ref)
        except WorkloadError:  # a preset that needs a field given (samples_per_epoch)
            w, reference, _ = resolve_workload({"preset": slug, "samples_per_epoch": 1000}, ref)
        configs = config_estimates(w, reference, ref)
        units = w.units_per_sample or 1.0
        labels = set(preset.benchmark_workloads)
        method = w.benchmark_method or w.method.value
        methods = {method, "pretrain"} if method == "full" else {method}
        gpus = {p.gpu for p in ref.points if p.workload in labels and p.gpu in ref.gpus}
        for gpu in sorted(gpus):
            tp = configs.throughput(ref.gpus[gpu], 1, None)
            if tp.situation is None or tp.situation.value not in seen:
                continue
            seen[tp.situation.value] += 1
            level = re.search(r"at the software level of (\S+)", tp.notes[0])
            assert level, tp.notes
            suite = level.group(1)
            rows = [
                p
                for p in ref.points
                if p.gpu == gpu
                and p.gpu_count == 1
                and p.workload in labels
                and p.method in methods
                and not p.suspect
                and suite_of(p).rstrip("@") == suite
                and p.precision == tp.precision
                and p.batch_size_per_gpu == w.micro_batch_size
                and (not w.seq_len or not p.seq_len or p.seq_len == w.seq_len)
            ]
            if tp.situation.value == "measured":
                assert rows, (slug, gpu)
                mean = statistics.fmean(p.throughput_total for p in rows) / units
                assert tp.samples_per_s == pytest.approx(mean, rel=1e-12), (slug, gpu)
                assert tp.basis.value == "measured"
            else:
                assert tp.basis.value == "scaled"
                assert any("measured on this GPU:" in n and "served:" in n for n in tp.notes)
    assert seen["measured"] >= 20 and seen["measured_rescaled"] >= 100, seen


def test_the_a5000_resnet50_answer_says_it_was_moved_with_both_figures(client: Any) -> None:
    r = client.post(
        "/v1/estimate",
        json={"workload": {"preset": "resnet50-imagenet"}, "hardware": {"gpu": "RTX A5000"}},
    )
    e = r.json()["estimate"]
    # Lambda measured 703 images/s at micro-batch 448 (suite lambda_pytorch_v0); the answer is
    # the pooled model's at the ranking's level (lambda_pytorch_v1@1.13) and micro-batch 256
    assert (e["situation"], e["basis"]) == ("measured_rescaled", "scaled")
    moved = next(n for n in e["notes"] if n.startswith("measured on this GPU:"))
    assert "703 samples/s" in moved and "lambda_pytorch_v0" in moved
    assert f"served: {e['samples_per_s']:.4g}" in moved
    assert any(ev["samples_per_s"] == 703.0 for ev in e["evidence"])


# -- ranking: bookable first, fresh dated prices before old or undated ones ------------------


def _runs(r: dict[str, Any]) -> bool:
    """The offer can run the job (no :data:`CANNOT_RUN` warning: out of memory, disk too
    small, host RAM short, driver too old, ...): the offers ranked by cost and price trust;
    the others come after them all."""
    return not any(w["code"] in CANNOT_RUN for w in r["estimate"]["warnings"])


def _check_order(results: list[dict[str, Any]]) -> int:
    """Among offers that can run: none unbookable above a bookable one; none old or undated
    above a fresh one of the same GPU and count (same bookability). Returns pairs checked."""
    fits = [r for r in results if _runs(r)]
    checked = 0
    for i, a in enumerate(fits):
        for b in fits[i + 1 :]:
            oa, ob = a["offer"], b["offer"]
            assert oa["bookable"] or not ob["bookable"], (oa["id"], ob["id"])
            same = (oa["gpu"], oa["gpu_count"], oa["bookable"]) == (
                ob["gpu"],
                ob["gpu_count"],
                ob["bookable"],
            )
            if same and ob["price_age"] == "fresh":
                checked += 1
                assert oa["price_age"] not in ("old", "undated"), (oa["id"], ob["id"])
    return checked


@pytest.mark.parametrize(
    "preset", ["resnet50-imagenet", "llama3-8b-full", "llama3-8b-lora", "bert-base-squad"]
)
def test_no_old_or_undated_price_ranks_above_a_fresh_one_of_its_class(
    client: Any, preset: str
) -> None:
    body = {"workload": {"preset": preset}, "limit": 1000}
    ranked = client.post("/v1/rank", json=body).json()["results"]
    assert ranked and _check_order(ranked) > 0
    # asked for, the sort alone orders them (cost per epoch, ties by price and id)
    plain = client.post("/v1/rank", json={**body, "bookable_fresh_first": False}).json()
    fits = [r for r in plain["results"] if _runs(r)]
    costs = [r["estimate"]["cost_per_epoch"] for r in fits]
    assert costs == sorted(costs)
    assert {r["offer"]["id"] for r in plain["results"]} == {r["offer"]["id"] for r in ranked}


def test_rank_columns_property_on_random_offers() -> None:
    rng = np.random.default_rng(22)
    for _ in range(200):
        n = int(rng.integers(1, 40))
        demoted = rng.random(n) < 0.5
        fresh = ~demoted & (rng.random(n) < 0.6)
        cols = CandidateColumns(
            offer_id=np.arange(n, dtype=np.int64),
            cost_per_epoch=rng.random(n),
            epoch_hours=rng.random(n),
            total_cost=rng.random(n),
            price_per_hour=rng.random(n),
            samples_per_s=rng.random(n),
            oom_high=rng.random(n) < 0.1,
            unbookable=rng.random(n) < 0.2,
            demoted=demoted,
            fresh=fresh,
            group=rng.integers(0, 4, n),
        )
        top, _ = rank_columns(cols)
        order = [i for i, _, _ in top]
        pos = {i: k for k, i in enumerate(order)}
        fits = [i for i in order if not cols.oom_high[i]]
        for i in fits:
            for j in fits:
                if cols.unbookable[i] and not cols.unbookable[j]:
                    assert pos[j] < pos[i]
                same = cols.group[i] == cols.group[j] and cols.unbookable[i] == cols.unbookable[j]
                if same and cols.demoted[i] and cols.fresh[j]:
                    assert pos[j] < pos[i]
                # two fresh or aging bookable offers keep the sort's order
                plain = not (cols.demoted[i] or cols.demoted[j])
                one_block = cols.unbookable[i] == cols.unbookable[j]
                if plain and one_block and cols.cost_per_epoch[i] < cols.cost_per_epoch[j]:
                    assert pos[i] < pos[j]


def test_quoted_examples_and_price_indices_are_labelled_and_rank_after_bookable_offers(
    client: Any,
) -> None:
    body = {"workload": {"preset": "resnet50-imagenet"}, "limit": 1000}
    ranked = client.post("/v1/rank", json=body).json()["results"]
    kinds = [r["offer"]["price_kind"] for r in ranked if _runs(r)]
    first_unbookable = min(i for i, k in enumerate(kinds) if k in ("price_index", "quoted_example"))
    assert all(k in ("price_index", "quoted_example") for k in kinds[first_unbookable:])
    top = ranked[0]["offer"]
    assert top["bookable"] and top["provider"] != "guide-listing"
    guide = next(r["offer"] for r in ranked if r["offer"]["provider"] == "guide-listing")
    assert (guide["price_kind"], guide["bookable"], guide["price_age"]) == (
        "quoted_example",
        False,
        "undated",
    )
    assert guide["price_seen_at"] is None and guide["offer_url"] is None
    only = client.post("/v1/rank", json={**body, "filters": {"bookable_only": True}}).json()
    assert only["results"] and all(r["offer"]["bookable"] for r in only["results"])
    listed = client.get("/v1/offers", params={"bookable_only": "true", "limit": 1000}).json()
    assert listed["total"] == len(only["results"]) + only["unestimated_offers"]


# -- price ages on a fresh install ---------------------------------------------------------


def _seed_offers() -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for path in sorted((PROJECT_ROOT / "seed_data").glob("offers*.csv")):
        rows += csv.DictReader(path.open(encoding="utf-8"))
    return rows


def test_every_seed_offer_carries_the_date_its_price_was_seen_or_is_undated(
    client: Any,
) -> None:
    offers = client.get("/v1/offers", params={"limit": 1000, "include_suspect": True}).json()
    seen: dict[tuple[str, str, str, str], str] = {}
    kinds: dict[tuple[str, str, str, str], str] = {}
    for r in _seed_offers():
        key = (r["provider"], r["offer_key"], r["region"], r["billing"])
        seen[key] = max(seen.get(key, ""), r["seen_on"])
        kinds[key] = r["price_kind"]
    now = dt.datetime.now(dt.UTC)
    assert len(offers["items"]) == len(seen)
    for o in offers["items"]:
        key = (o["provider"], o["offer_key"], o["region"], o["billing"])
        date = seen[key]
        assert o["price_seen_at"] == (f"{date}T00:00:00+00:00" if date else None), key
        assert o["price_kind"] == kinds[key]
        assert o["bookable"] == (kinds[key] == "hand_kept")
        age = (now - dt.datetime.fromisoformat(o["price_seen_at"])).days if date else None
        if age is not None:
            assert o["age_days"] == pytest.approx(
                (now - dt.datetime.fromisoformat(o["price_seen_at"])).total_seconds() / 86400,
                abs=0.01,
            )
        assert o["price_age"] == tier(o["price_kind"], o["age_days"])
        assert o["stale"] == (o["price_age"] in ("old", "undated") or o["provider_refresh_stale"])


def test_price_age_counts_of_a_fresh_install_are_the_readmes(client: Any, seeded_url: str) -> None:
    """The README states the tier counts of the seed data on a given day; the API's counting
    at that day gives them, and ``/v1/providers`` totals today's."""
    from app.db.session import create_engine_from_url, create_session_factory
    from app.services.offers import count_price_tiers

    m = re.search(
        r"price ages on (\d{4}-\d{2}-\d{2}): (\d+) fresh, (\d+) aging, (\d+) old, (\d+) "
        r"undated; (\d+) of the ([\d,]+) offers bookable",
        " ".join(README.split()),
    )
    assert m, "README: price ages sentence"
    day = dt.datetime.fromisoformat(m.group(1)).replace(tzinfo=dt.UTC, hour=12)
    stated = [int(m.group(i).replace(",", "")) for i in range(2, 8)]
    engine = create_engine_from_url(seeded_url)
    try:
        with create_session_factory(engine)() as session:
            counts = count_price_tiers(session, day)["all"]
    finally:
        engine.dispose()
    assert [counts[k] for k in ("fresh", "aging", "old", "undated", "bookable", "offers")] == (
        stated
    )
    today = client.get("/v1/providers").json()
    totals = today["price_ages"]
    assert sum(totals[k] for k in ("fresh", "aging", "old", "undated")) == totals["offers"]
    assert totals["offers"] == stated[5] and totals["bookable"] == stated[4]
    assert sum(p["price_ages"]["offers"] for p in today["providers"]) == totals["offers"]
    assert today["age_tiers_days"] == {k: list(v) for k, v in AGE_TIERS_DAYS.items()}


def test_every_offer_source_is_a_public_url_or_a_repository_file(client: Any) -> None:
    offers = client.get("/v1/offers", params={"limit": 1000, "include_suspect": True}).json()
    providers = client.get("/v1/providers").json()["providers"]
    sources = [o["source"] for o in offers["items"]] + [p["source"] for p in providers]
    for source in sources:
        first = source.split()[0]
        if first.startswith("https://"):
            continue
        path = first.split("#")[0]
        assert not path.startswith(".."), source
        assert (Path(PROJECT_ROOT) / path).is_file(), source


# -- exchange rates with their date ------------------------------------------------------------


def test_converted_answers_carry_their_rates_with_date_source_and_a_warning(
    client: Any,
) -> None:
    ranked = client.post(
        "/v1/rank",
        json={"workload": {"preset": "resnet50-imagenet"}, "filters": {"provider": "gpushare"}},
    ).json()
    (rate,) = ranked["exchange_rates"]
    assert (rate["base"], rate["quote"], rate["rate"], rate["seen_on"]) == (
        "USD",
        "CNY",
        7.0197,
        "2026-01-08",
    )
    assert "CFETS" in rate["source"] and "older than 7 days" in rate["warning"]
    today = dt.datetime.now(dt.UTC).date()
    assert rate["age_days"] == (today - dt.date(2026, 1, 8)).days
    # CNY prices in EUR go through USD: both rates, each with its own date
    eur = client.post(
        "/v1/rank",
        json={
            "workload": {"preset": "resnet50-imagenet"},
            "filters": {"provider": "gpushare"},
            "currency": "EUR",
        },
    ).json()
    assert [(x["base"], x["quote"], x["seen_on"]) for x in eur["exchange_rates"]] == [
        ("USD", "CNY", "2026-01-08"),
        ("EUR", "USD", "2026-05-08"),
    ]
    # nothing converted, nothing listed
    usd = client.post(
        "/v1/rank",
        json={"workload": {"preset": "resnet50-imagenet"}, "filters": {"provider": "vast"}},
    ).json()
    assert usd["exchange_rates"] == []
    offer = ranked["results"][0]["offer"]["id"]
    detail = client.get(f"/v1/offers/{offer}").json()
    assert [x["quote"] for x in detail["exchange_rates"]] == ["CNY"]
    page = client.get("/", params={"preset": "resnet50-imagenet", "provider": "gpushare"}).text
    assert "1 USD = 7.0197 CNY (published 2026-01-08" in page and "rate older than a week" in page
    # each row says when its price was seen, and what it is when it cannot be rented
    assert 'class="badge age age-undated"' in page and ">undated<" in page
    assert ">price index<" in page and ">stale<" not in page
