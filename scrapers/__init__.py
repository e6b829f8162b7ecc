"""Provider scrapers (one module per provider); see issue "Live offers"."""
