"""The words shared by offers, filters and estimates: interconnects and currency conversion."""

from __future__ import annotations

import pytest

from app.model.cost import UnknownCurrencyError, conversion_steps, convert
from app.model.types import Interconnect, interconnect_class, interconnect_label

#: seed_data/currency_rates.csv: CFETS 2026-01-08 and ECB 2026-05-08
RATES = {("USD", "CNY"): 7.0197, ("EUR", "USD"): 1.1761}


@pytest.mark.parametrize(
    ("raw", "label", "link"),
    [
        ("nvlink", "nvlink", Interconnect.NVLINK),
        ("NVLink", "nvlink", Interconnect.NVLINK),
        (" NVSwitch ", "nvswitch", Interconnect.NVLINK),
        ("sxm", "nvlink", Interconnect.NVLINK),
        ("PCIe", "pcie", Interconnect.PCIE),
        ("infiniband", None, None),
        ("", None, None),
        (None, None, None),
    ],
)
def test_interconnect_words(raw: str | None, label: str | None, link: Interconnect | None) -> None:
    assert interconnect_label(raw) == label
    assert interconnect_class(raw) == link


def test_stored_pairs_convert_in_one_step() -> None:
    assert conversion_steps("USD", "CNY", RATES) == (("*", 7.0197),)
    assert conversion_steps("CNY", "USD", RATES) == (("/", 7.0197),)
    assert conversion_steps("EUR", "USD", RATES) == (("*", 1.1761),)
    assert conversion_steps("USD", "USD", RATES) == ()
    assert convert(1.1761, "USD", "EUR", RATES) == pytest.approx(1.0)


def test_other_pairs_cross_through_usd() -> None:
    assert conversion_steps("EUR", "CNY", RATES) == (("*", 1.1761), ("*", 7.0197))
    assert conversion_steps("CNY", "EUR", RATES) == (("/", 7.0197), ("/", 1.1761))
    # 1 EUR = 1.1761 USD = 8.25587 CNY
    assert convert(1.0, "EUR", "CNY", RATES) == pytest.approx(8.25587, abs=1e-5)
    assert convert(0.75, "CNY", "EUR", RATES) == pytest.approx(0.090844, abs=1e-6)


def test_no_rate_is_an_error() -> None:
    for source, target in (("JPY", "USD"), ("EUR", "JPY"), ("JPY", "GBP")):
        with pytest.raises(UnknownCurrencyError):
            conversion_steps(source, target, RATES)
    with pytest.raises(UnknownCurrencyError):
        convert(1.0, "EUR", "CNY", {("USD", "CNY"): 7.0197})
