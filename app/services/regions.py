"""Region filter: a substring of the offer's region, or a country named in English, in Chinese
or by its ISO 3166-1 code, which matches the region labels providers use inside it.

Providers label regions their own way: ``华北`` (a Chinese platform's machine-room area),
``us-east-1`` (AWS), ``eastus`` (Azure), ``Texas, US, NA`` (Vast.ai: place, ISO code,
continent), ``FIN-01`` (a Finnish data centre). A user filtering by ``China`` or ``中国`` means
all of the first kind. :data:`COUNTRIES` is the mapping, as data: each country's names and the
patterns of the region labels inside it. The names are self-evident (a country's English and
Chinese names, its ISO 3166-1 alpha-2 code); the patterns are the labels' own words: China's
seven geographic regions as Chinese platforms list them (华北 North, 华东 East, 华南 South,
华中 Central, 西南 South-west, 西北 North-west, 东北 North-east; the divisions of
https://zh.wikipedia.org/wiki/中国地理区划) and its larger cities, cloud region prefixes that
name the country (``us-``, ``cn-``), the ``, XX,`` code of ``place, XX, continent`` labels,
and the airport (IATA) or city codes Vultr and DigitalOcean name their US regions by
(``ewr``, ``nyc1``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Country:
    """A country: the names a user types for it (any case) and regex patterns of the region
    labels inside it (matched case-insensitively anywhere in the label)."""

    names: tuple[str, ...]
    patterns: tuple[str, ...]


def _listed_code(code: str) -> str:
    """The ``place, XX, continent`` form (Vast.ai), and a label that is the code alone."""
    return rf"(^|,\s*){code}(\s*,|$)"


#: Countries with the region labels of their data centres. A pattern is a regular expression
#: searched in the region label, case-insensitive.
COUNTRIES: tuple[Country, ...] = (
    Country(
        names=("China", "中国", "CN", "中国大陆", "mainland China"),
        patterns=(
            *("华北", "华东", "华南", "华中", "西南", "西北", "东北"),
            *("北京", "上海", "广州", "深圳", "杭州", "成都", "重庆", "内蒙古", "宁夏"),
            r"\bcn-",
            r"\bchina\b",
            _listed_code("CN"),
        ),
    ),
    Country(
        names=("United States", "USA", "US", "美国", "America"),
        patterns=(
            r"^us[-_ (]",
            r"^us$",
            r"\bus-",
            r"\b(east|west|central|north|south)(central)?us\d*\b",
            r"\bunited states\b",
            # Vultr and DigitalOcean name US regions by their airport (IATA) or city code
            r"^(sea|ord|ewr|lax|sjc|atl|dfw|mia|sfo)$",
            r"^(nyc|sfo)\d$",
            r"\bny\d\b",
            _listed_code("US"),
        ),
    ),
    Country(
        names=("Canada", "加拿大", "CA"),
        patterns=(r"\bcanada\b", r"\bca-", _listed_code("CA")),
    ),
    Country(
        names=("Finland", "芬兰", "FI"),
        patterns=(r"\bfin-\d", r"\bfinland\b", r"\beu-north1\b", _listed_code("FI")),
    ),
    Country(
        names=("Hong Kong", "香港", "HK"),
        patterns=(r"\bhong kong\b", "香港", _listed_code("HK")),
    ),
    Country(
        names=("Taiwan", "台湾", "TW"),
        patterns=(r"\btaiwan\b", "台湾", _listed_code("TW")),
    ),
    Country(names=("Germany", "德国", "DE"), patterns=(r"\bgermany\b", _listed_code("DE"))),
    Country(names=("France", "法国", "FR"), patterns=(r"\bfrance\b", _listed_code("FR"))),
    Country(names=("Sweden", "瑞典", "SE"), patterns=(r"\bsweden\b", _listed_code("SE"))),
    Country(names=("Norway", "挪威", "NO"), patterns=(r"\bno-", r"\bnorway\b", _listed_code("NO"))),
    Country(names=("Bulgaria", "保加利亚", "BG"), patterns=(r"\bbulgaria\b", _listed_code("BG"))),
    Country(names=("Vietnam", "越南", "VN"), patterns=(r"\bvietnam\b", _listed_code("VN"))),
    Country(names=("Morocco", "摩洛哥", "MA"), patterns=(r"\bcasablanca\b", _listed_code("MA"))),
)

_BY_NAME = {name.casefold(): c for c in COUNTRIES for name in c.names}


def country_named(text: str) -> Country | None:
    """The country ``text`` names (any case, surrounding space ignored), else ``None``."""
    return _BY_NAME.get(text.strip().casefold())


def region_matches(text: str, region: str) -> bool:
    """Whether the region filter ``text`` keeps an offer in ``region``: when ``text`` names a
    country, one of its patterns matches or ``text`` is a whole word of the label (``US``
    keeps ``Texas, US, NA`` but not ``Russia``); otherwise ``text`` is a case-insensitive
    substring of it (``us-east``)."""
    country = country_named(text)
    if country is None:
        return text.casefold() in region.casefold()
    word = rf"(?<![0-9a-z]){re.escape(text.strip())}(?![0-9a-z])"
    return any(re.search(p, region, re.IGNORECASE) for p in (*country.patterns, word))


def matching_regions(text: str, regions: Iterable[str]) -> list[str]:
    """The ``regions`` (distinct labels) the filter ``text`` keeps (:func:`region_matches`)."""
    return [r for r in regions if region_matches(text, r)]
