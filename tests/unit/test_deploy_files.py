"""The Dockerfile and docs/deploy/ manifests run the installed package as the CLI defines it."""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

import yaml

from app.asgi import healthz
from app.cli import main
from app.settings import PROJECT_ROOT

DEPLOY = PROJECT_ROOT / "docs" / "deploy"


def _dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per Dockerfile instruction, continuation lines joined."""
    text = (PROJECT_ROOT / "Dockerfile").read_text(encoding="utf-8")
    text = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _assert_cli_accepts(argv: list[str]) -> None:
    """``argv`` (``gpucost ...``) names a real subcommand with real options."""
    assert argv[0].endswith("gpucost"), argv
    command = main.commands[argv[1]]
    options = {o for p in command.params for o in getattr(p, "opts", [])}
    for arg in argv[2:]:
        if arg.startswith("--"):
            assert arg.split("=")[0] in options, f"{arg} is not an option of gpucost {argv[1]}"


def test_dockerfile_serves_the_installed_wheel_as_a_non_root_user() -> None:
    steps = _dockerfile()
    froms = [a for i, a in steps if i == "FROM"]
    assert froms and all(re.match(r"python:3\.\d+-slim\b", f) for f in froms)
    final = steps[max(k for k, (i, _) in enumerate(steps) if i == "FROM") :]
    runs = " ".join(a for i, a in final if i == "RUN")
    assert re.search(r"pip install [^&]*\.whl", runs), "the image installs the built wheel"
    users = [a for i, a in final if i == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root")
    entry = json.loads(next(a for i, a in final if i == "ENTRYPOINT"))
    cmd = json.loads(next(a for i, a in final if i == "CMD"))
    assert entry == ["gpucost"]
    _assert_cli_accepts(entry + cmd)
    assert cmd[0] == "serve"
    port = cmd[cmd.index("--port") + 1]
    health = next(a for i, a in final if i == "HEALTHCHECK")
    assert f"127.0.0.1:{port}/healthz" in health
    assert healthz.paths == {"/healthz"}


def _manifests(name: str) -> list[dict[str, Any]]:
    with (DEPLOY / name).open(encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d]


def test_kubernetes_deployment_probes_healthz_and_runs_as_non_root() -> None:
    docs = {d["kind"]: d for d in _manifests("gpucost-deployment.yaml")}
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    (api,) = pod["containers"]
    _assert_cli_accepts(api["command"])
    assert api["command"][1] == "serve"
    port = int(api["command"][api["command"].index("--port") + 1])
    assert api["ports"][0]["containerPort"] == port
    for probe in ("readinessProbe", "livenessProbe"):
        assert api[probe]["httpGet"]["path"] == "/healthz"
    for init in pod.get("initContainers", []):
        _assert_cli_accepts(init["command"])
    assert docs["Service"]["spec"]["selector"] == pod_labels(docs["Deployment"])


def pod_labels(deployment: dict[str, Any]) -> dict[str, str]:
    return deployment["spec"]["template"]["metadata"]["labels"]


def test_cronjob_runs_the_refresh_command() -> None:
    (job,) = _manifests("gpucost-refresh-cronjob.yaml")
    (container,) = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    _assert_cli_accepts(container["command"])
    assert container["command"][1] == "refresh"


def test_systemd_units_run_the_installed_package_not_a_checkout() -> None:
    for name, sub in (("gpucost.service", "serve"), ("gpucost-refresh.service", "refresh")):
        text = (DEPLOY / name).read_text(encoding="utf-8")
        (exec_start,) = re.findall(r"^ExecStart=(.+)$", text, re.M)
        argv = shlex.split(exec_start)
        _assert_cli_accepts(argv)
        assert argv[1] == sub
        assert ".venv" not in exec_start and "/srv/gpucost" not in text
