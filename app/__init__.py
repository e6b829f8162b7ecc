"""gpucost: where to rent GPUs for a training job.

Importing this package has no side effects: settings, engines and the ASGI app are built by
factories (:func:`app.settings.get_settings`, :func:`app.db.session.create_engine_from_url`,
:func:`app.asgi.create_app`).
"""
