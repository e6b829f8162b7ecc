"""Scraper settings from ``GPUCOST_SCRAPER_*`` environment variables (pydantic-settings).

Every provider has a base URL and an API key setting, ``GPUCOST_SCRAPER_<NAME>_URL`` and
``GPUCOST_SCRAPER_<NAME>_API_KEY`` (NAME = VAST, RUNPOD, AZURE, AWS, LAMBDA, VULTR, GCP, OCI,
TENSORDOCK, VERDA, HYPERSTACK, FLUIDSTACK, SHADEFORM), so a mirror, a proxy or a test server can
stand in for the provider. Keys are only sent by the providers that use them (Lambda, GCP,
TensorDock, Verda, Hyperstack, FluidStack and Shadeform need one; the others are public and
ignore it). Verda's OAuth client needs ``GPUCOST_SCRAPER_VERDA_CLIENT_ID`` too, its secret is
``GPUCOST_SCRAPER_VERDA_API_KEY``. The public-catalog fallback has its own base URLs
(``GPUCOST_SCRAPER_GPUHUNT_URL``, ``GPUCOST_SCRAPER_SKYPILOT_URL``).
List settings accept JSON (``["eastus","westus2"]``) or a comma-separated string.

Build with :func:`load_scraper_settings` (never at import time).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

StrList = Annotated[list[str], NoDecode]
IntList = Annotated[list[int], NoDecode]

#: Vast ``gpu_name`` values queried one by one (exact names, see providers.md §1 pitfalls).
DEFAULT_VAST_GPU_NAMES = [
    "RTX 4090",
    "RTX 5090",
    "RTX 3090",
    "RTX 4080S",
    "RTX 4070S Ti",
    "RTX A6000",
    "RTX 6000Ada",
    "RTX PRO 6000 WS",
    "RTX PRO 6000 S",
    "A40",
    "A10",
    "L4",
    "L40",
    "L40S",
    "A100 PCIE",
    "A100 SXM4",
    "A100X",
    "H100 PCIE",
    "H100 SXM",
    "H100 NVL",
    "H200",
    "H200 NVL",
    "B200",
    "Tesla V100",
    "Tesla T4",
    "Q RTX 6000",
    "Q RTX 8000",
]


def _split(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


class ScraperSettings(BaseSettings):
    """Settings of the scrapers and their shared HTTP client (timeouts in seconds)."""

    model_config = SettingsConfigDict(env_prefix="GPUCOST_SCRAPER_", extra="ignore")

    #: Providers refreshed when ``gpucost refresh`` gets no ``--provider`` (default: all).
    providers: StrList | None = None
    user_agent: str = "gpucost-refresh/0.1 (GPU price comparison; nightly catalog refresh)"
    timeout_s: float = Field(default=60.0, gt=0)
    connect_timeout_s: float = Field(default=10.0, gt=0)
    #: Attempts per request (1 = no retry) on 429, 5xx, timeouts and connection errors.
    retries: int = Field(default=4, ge=1)
    #: First back-off wait; doubles per attempt up to ``backoff_max_s`` (Retry-After honoured).
    backoff_s: float = Field(default=1.0, ge=0)
    backoff_max_s: float = Field(default=30.0, ge=0)
    #: Parallel requests inside one provider (Vast per-GPU queries, Azure/AWS regions).
    concurrency: int = Field(default=4, ge=1)

    #: A provider whose answer has more than this fraction fewer offers than its last
    #: successful run is not applied (run recorded ``suspect``); ``--accept-shrink`` applies it.
    max_shrink_fraction: float = Field(default=0.5, ge=0, le=1)
    #: Wall-clock limit for one provider's whole fetch (every request, retry and wait).
    provider_deadline_s: float = Field(default=900.0, gt=0)
    #: Wall-clock limit for the whole run; a provider still fetching then fails for this run.
    run_deadline_s: float = Field(default=1800.0, gt=0)
    #: Largest response body read into memory (JSON answers); a larger one fails the provider.
    max_response_mb: float = Field(default=64.0, gt=0)
    #: Largest streamed body (AWS price-list CSVs, parsed line by line) and longest line.
    max_stream_mb: float = Field(default=8192.0, gt=0)
    max_line_kb: float = Field(default=1024.0, gt=0)

    vast_url: str = "https://console.vast.ai/api/v0"
    vast_api_key: SecretStr | None = None
    vast_gpu_names: StrList = Field(default_factory=lambda: list(DEFAULT_VAST_GPU_NAMES))
    #: ``limit`` per query: without one Vast returns a small subset (vast-cli issue #268).
    vast_limit: int = Field(default=1000, ge=1)
    #: Also query every GPU name *not* in ``vast_gpu_names`` (one more query, same limit).
    vast_other_gpus: bool = True
    #: GB of disk priced into ``dph_total`` (Vast ``allocated_storage``).
    vast_storage_gb: float = Field(default=50.0, ge=0)

    runpod_url: str = "https://api.runpod.io/graphql"
    runpod_api_key: SecretStr | None = None
    #: GPU counts queried through ``lowestPrice(input: {gpuCount: …})``.
    runpod_gpu_counts: IntList = Field(default_factory=lambda: [1, 2, 4, 8])
    runpod_min_cuda: str | None = None

    azure_url: str = "https://prices.azure.com/api/retail/prices"
    azure_api_key: SecretStr | None = None
    azure_regions: StrList = Field(
        default_factory=lambda: [
            "eastus",
            "eastus2",
            "southcentralus",
            "westus2",
            "westus3",
            "westeurope",
            "northeurope",
            "swedencentral",
        ]
    )
    #: Safety stop for ``NextPageLink`` walks; hitting it fails the provider (never truncates).
    azure_max_pages: int = Field(default=200, ge=1)

    aws_url: str = "https://pricing.us-east-1.amazonaws.com"
    aws_api_key: SecretStr | None = None
    aws_spot_url: str = "https://website.spot.ec2.aws.a2z.com/spot.json"
    aws_regions: StrList = Field(default_factory=lambda: ["us-east-1", "us-west-2"])

    lambda_url: str = "https://cloud.lambda.ai/api/v1"
    lambda_api_key: SecretStr | None = None

    vultr_url: str = "https://api.vultr.com/v2"
    vultr_api_key: SecretStr | None = None

    #: Cloud Billing Catalog API (``/services/<id>/skus``); the key is a free API key.
    gcp_url: str = "https://cloudbilling.googleapis.com/v1"
    gcp_api_key: SecretStr | None = None
    #: Safety stop for ``nextPageToken`` walks (5000 SKUs a page); hitting it fails GCP.
    gcp_max_pages: int = Field(default=20, ge=1)

    #: OCI Cost Estimator shapes (``/shapes.json``) and the public price list.
    oci_url: str = "https://www.oracle.com/a/ocom/docs/cloudestimator2/data"
    oci_prices_url: str = "https://apexapps.oracle.com/pls/apex/cetools/api/v1/products/"
    oci_api_key: SecretStr | None = None

    tensordock_url: str = "https://dashboard.tensordock.com/api/v2"
    tensordock_api_key: SecretStr | None = None

    #: Verda (formerly DataCrunch): OAuth2 client credentials, the secret is the API key.
    verda_url: str = "https://api.datacrunch.io/v1"
    verda_client_id: str | None = None
    verda_api_key: SecretStr | None = None

    hyperstack_url: str = "https://infrahub-api.nexgencloud.com/v1"
    hyperstack_api_key: SecretStr | None = None

    fluidstack_url: str = "https://platform.fluidstack.io"
    fluidstack_api_key: SecretStr | None = None

    shadeform_url: str = "https://api.shadeform.ai/v1"
    shadeform_api_key: SecretStr | None = None

    #: Public-catalog fallback (:mod:`scrapers.catalogs`): gpuhunt's published catalogs and
    #: SkyPilot's catalog CSVs.
    gpuhunt_url: str = "https://dstack-gpu-pricing.s3.eu-west-1.amazonaws.com/v3"
    skypilot_url: str = (
        "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs/v8"
    )
    #: A provider whose own API needs a key that is not set loads its public catalog instead
    #: (labelled ``catalog``); ``false`` skips it as before.
    catalog_fallback: bool = True

    @field_validator(
        "providers",
        "vast_gpu_names",
        "azure_regions",
        "aws_regions",
        "runpod_gpu_counts",
        mode="before",
    )
    @classmethod
    def _lists(cls, value: Any) -> Any:
        return _split(value)

    def api_key(self, provider: str) -> str | None:
        """The API key for ``provider`` (``GPUCOST_SCRAPER_<NAME>_API_KEY``), if set."""
        secret = getattr(self, f"{provider}_api_key", None)
        value = secret.get_secret_value().strip() if secret is not None else ""
        return value or None

    def secret_values(self) -> list[str]:
        """Every configured API key value (what :func:`scrapers.redact.redact` masks)."""
        return [
            secret.get_secret_value().strip()
            for name, secret in self
            if name.endswith("_api_key") and isinstance(secret, SecretStr)
            if secret.get_secret_value().strip()
        ]


def load_scraper_settings(**overrides: Any) -> ScraperSettings:
    """Read :class:`ScraperSettings` from the environment (``overrides`` win)."""
    return ScraperSettings(**overrides)
