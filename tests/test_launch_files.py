"""Launch files validate against the launchers' own schemas; unsupported providers are refused.

The schemas are the launchers' (``tests/fixtures/launchers/README.md``: generated from
skypilot 0.14.1 and dstack 0.22.5 with their own code); nothing is launched.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest
import yaml
from click.testing import CliRunner
from sqlalchemy import select

from app.backends import LocalBackend
from app.cli import main
from app.db.models import InstanceOffer, Provider
from app.db.session import create_engine_from_url, create_session_factory
from app.launch import load_launch_data
from app.settings import Settings, get_settings
from tests.conftest import SEED_DIR

pytestmark = pytest.mark.db

FIXTURES = Path(__file__).parent / "fixtures" / "launchers"


@functools.cache
def schema(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.schema.json").read_text(encoding="utf-8"))


def _case_insensitive_enum(validator: Any, enums: Any, instance: Any, schema: Any) -> Any:
    # SkyPilot's own keyword (sky/utils/validator.py): cloud names in any case
    if instance.lower() not in [e.lower() for e in enums]:
        yield jsonschema.ValidationError(f"{instance!r} is not one of {enums!r}")


#: The validator SkyPilot validates task YAML with (sky/utils/validator.py).
SkyValidator = jsonschema.validators.extend(
    jsonschema.Draft7Validator, {"case_insensitive_enum": _case_insensitive_enum}
)


@functools.cache
def validator(name: str) -> Any:
    if name.startswith("skypilot"):
        return SkyValidator(schema(name))
    return jsonschema.Draft202012Validator(schema(name))


def validate(fmt: str, text: str) -> dict[str, Any]:
    """The file parsed as YAML and checked against the launcher's schema (raises if not)."""
    doc = yaml.safe_load(text)
    if fmt == "skypilot":
        validator("skypilot-task").validate(doc)
        validator("skypilot-resources").validate(doc["resources"])
    else:
        validator("dstack-configuration").validate(doc)
    return doc


@pytest.fixture(scope="module")
def offers(seeded_url: str) -> list[tuple[int, str, float, str]]:
    """(id, provider, GPU count, billing) of every seeded offer."""
    engine = create_engine_from_url(seeded_url)
    try:
        with create_session_factory(engine)() as s:
            rows = s.execute(
                select(
                    InstanceOffer.id, Provider.slug, InstanceOffer.gpu_count, InstanceOffer.billing
                )
                .join(Provider)
                .order_by(InstanceOffer.id)
            ).all()
        return [tuple(r) for r in rows]  # type: ignore[misc]
    finally:
        engine.dispose()


@pytest.mark.parametrize("fmt", ["skypilot", "dstack"])
def test_every_supported_offer_gets_a_valid_file_and_the_others_a_reason(
    fmt: str, seeded_url: str, offers: list[tuple[int, str, float, str]]
) -> None:
    """Every seeded offer, through the handler ``GET /v1/offers/{id}/launch`` runs
    (:func:`app.operations.launch_file`; the route itself: the tests below)."""
    data = load_launch_data(SEED_DIR)
    supported = {p for p, f in data.targets if f == fmt}
    seen: set[str] = set()
    backend = LocalBackend(Settings(database_url=seeded_url), prepare=False)
    for offer_id, provider, gpu_count, billing in offers:
        answer = backend.launch(offer_id, {"format": fmt})
        r = SimpleNamespace(status_code=answer.status, text=answer.body.decode(), json=answer.json)
        whole = float(gpu_count).is_integer()
        if r.status_code == 422 and "cannot name" in r.text:
            # neither the launcher's GPU name nor a usable instance type (A800 on dstack)
            assert provider in supported
            continue
        if provider in supported and (whole or fmt == "skypilot"):
            assert r.status_code == 200, (offer_id, provider, r.text)
            doc = validate(fmt, r.text)
            cloud = data.targets[(provider, fmt)].cloud
            if fmt == "skypilot":
                assert doc["resources"]["cloud"] == cloud
                assert doc["resources"]["use_spot"] == (billing == "spot")
            else:
                assert doc["backends"] == [cloud]
                assert doc["spot_policy"] == ("spot" if billing == "spot" else "on-demand")
                assert doc["resources"]["gpu"]["count"] == gpu_count
            seen.add(provider)
        else:
            assert r.status_code == 422, (offer_id, provider, r.text)
            err = r.json()
            assert err["extra"][0]["key"] == "format"
            assert "does not support" in err["detail"] or "whole GPUs" in err["detail"]
    backend.close()
    assert seen == supported, "every provider the launcher supports has a seeded offer"


def test_the_file_asks_for_the_instance_gpu_and_the_disk_the_job_needs(client: Any) -> None:
    # AWS g5.2xlarge in us-east-1: 1x A10G, on demand; Llama 3 8B LoRA keeps 3 checkpoints
    offer = next(
        o
        for o in client.get("/v1/offers", params={"provider": "aws", "limit": 100}).json()["items"]
        if o["instance_type"] == "g5.2xlarge" and o["billing"] == "on_demand"
    )
    params = {
        "preset": "resnet50-imagenet",
        "dataset_gb": "400",
        "max_total_cost": "100",
        "max_total_hours": "48",
    }
    sky = client.get(f"/v1/offers/{offer['id']}/launch", params={"format": "skypilot", **params})
    assert sky.status_code == 200
    assert sky.headers["content-disposition"].endswith(f'gpucost-offer-{offer["id"]}.sky.yaml"')
    doc = validate("skypilot", sky.text)
    # dataset 400 GB + ResNet-50's 16-bit weights (25.6M x 2 B) + its kept checkpoints:
    # more than SkyPilot's 256 GB default, so the file asks for the job's need, rounded up
    detail = client.get(f"/v1/offers/{offer['id']}", params={"preset": "resnet50-imagenet"})
    assert detail.status_code == 200
    assert doc["resources"] == {
        "cloud": "aws",
        "region": "us-east-1",
        "instance_type": "g5.2xlarge",
        "accelerators": "A10G:1",
        "use_spot": False,
        "disk_size": 401,
    }
    assert "# budget: max_total_cost 100 USD (within)" in sky.text
    assert "# deadline: max_total_hours 48 (OVER)" in sky.text  # 90 epochs on one A10G
    assert "samples/s" in sky.text and "OOM risk" in sky.text
    ds = client.get(f"/v1/offers/{offer['id']}/launch", params={"format": "dstack", **params})
    doc = validate("dstack", ds.text)
    assert doc["instance_types"] == ["g5.2xlarge"] and doc["regions"] == ["us-east-1"]
    assert doc["resources"] == {
        "gpu": {"name": ["A10G"], "memory": "23GB..25GB", "count": 1},
        "disk": "401GB..",
    }
    assert doc["max_price"] == pytest.approx(offer["price_per_hour"], abs=0.01)


def test_unsupported_and_bad_requests(client: Any) -> None:
    gpushare = client.get("/v1/offers", params={"provider": "gpushare"}).json()["items"][0]
    r = client.get(f"/v1/offers/{gpushare['id']}/launch", params={"format": "skypilot"})
    assert r.status_code == 422
    assert "neither SkyPilot nor dstack supports it" in r.json()["detail"]
    vultr = client.get("/v1/offers", params={"provider": "vultr"}).json()["items"][0]
    r = client.get(f"/v1/offers/{vultr['id']}/launch", params={"format": "skypilot"})
    assert r.status_code == 422 and "use format=dstack" in r.json()["detail"]
    r = client.get("/v1/offers/1/launch", params={"format": "ansible", "seq_len": "-1"})
    assert r.status_code == 400
    assert [e["key"] for e in r.json()["extra"]] == ["format", "seq_len"]
    assert client.get("/v1/offers/999999/launch", params={"format": "dstack"}).status_code == 404
    assert client.get("/v1/offers/abc/launch", params={"format": "dstack"}).status_code == 400


@pytest.fixture
def cli_env(seeded_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("GPUCOST_DATABASE_URL", seeded_url)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_cli_launch_writes_the_api_file(client: Any, cli_env: None, tmp_path: Path) -> None:
    lam = client.get("/v1/offers", params={"provider": "lambda"}).json()["items"][0]
    args = ["--format", "dstack", "--preset", "gpt2-124m-pretrain", "--set", "epochs=2"]
    api = client.get(
        f"/v1/offers/{lam['id']}/launch",
        params={"format": "dstack", "preset": "gpt2-124m-pretrain", "epochs": "2"},
    )
    out = tmp_path / "task.dstack.yml"
    result = CliRunner().invoke(main, ["launch", str(lam["id"]), *args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == api.content
    gpushare = client.get("/v1/offers", params={"provider": "gpushare"}).json()["items"][0]
    result = CliRunner().invoke(main, ["launch", str(gpushare["id"]), "--format", "dstack"])
    assert result.exit_code == 2
    assert "does not support provider 'gpushare'" in result.stderr


def test_ranking_page_rows_link_their_launch_files(client: Any) -> None:
    import re

    page = client.get("/", params={"preset": "resnet50-imagenet", "limit": "5"}).text
    rows = re.findall(r'<tr data-offer-id="(\d+)".*?</tr>', page, re.DOTALL)
    assert rows
    for offer_id in rows:
        row = re.search(rf'<tr data-offer-id="{offer_id}".*?</tr>', page, re.DOTALL)
        assert row is not None
        provider = client.get(f"/v1/offers/{offer_id}").json()["offer"]["provider"]
        links = re.findall(r'href="(/v1/offers/\d+/launch[^"]*)" download', row.group(0))
        supported = load_launch_data(SEED_DIR).supporters(provider)
        assert len(links) == len(supported), (provider, links)
        for href in links:
            r = client.get(href.replace("&amp;", "&"))
            assert r.status_code == 200 and "preset=resnet50-imagenet" in href
