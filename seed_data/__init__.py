"""Seed data CSVs (shipped in the wheel as ``app.seed_data``; see app/resources.py)."""
