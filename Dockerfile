# gpucost service image: the wheel built from this checkout, installed into a slim Python.
#   docker build -t gpucost .
#   docker run -p 8000:8000 -e GPUCOST_DATABASE_URL=postgresql+psycopg://user:pw@db:5432/gpucost gpucost
# Without GPUCOST_DATABASE_URL it serves an SQLite file in /var/lib/gpucost (mount a volume there).
# The same image runs the other commands: `docker run gpucost db upgrade`, `... seed`, `... refresh`.
# CI checks what this installs: .ci/wheel-smoke builds the same wheel, installs it into a fresh
# venv and runs db upgrade, seed, serve and one POST /v1/rank.

FROM python:3.12-slim AS build
WORKDIR /src
COPY . .
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /dist .

FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN useradd --system --uid 10001 --user-group --home-dir /var/lib/gpucost --create-home gpucost
COPY --from=build /dist/ /tmp/dist/
RUN pip install --no-cache-dir /tmp/dist/*.whl && rm -rf /tmp/dist
USER 10001:10001
WORKDIR /var/lib/gpucost
EXPOSE 8000
# /healthz answers 200 when the service and its database are up, 503 when the database is not
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status != 200)"]
ENTRYPOINT ["gpucost"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
