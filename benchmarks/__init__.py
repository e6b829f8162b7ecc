"""Speed measurements (run as scripts; they print their figures)."""
