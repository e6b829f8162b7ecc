"""Persistence: SQLAlchemy 2 models, engine/session factories, migrations and seed loading."""
