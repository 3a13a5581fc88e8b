"""The Docker files hold together: every service has a health check, the API waits for
healthy servers, and the API's environment is valid hello-memory settings."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

from hello_memory.config import load_settings

DOCKER = Path(__file__).resolve().parents[2] / "docker"


def test_compose_services_health_and_volumes() -> None:
    compose = yaml.safe_load((DOCKER / "docker-compose.yml").read_text(encoding="utf-8"))
    services = compose["services"]
    assert set(services) == {"api", "postgres", "qdrant", "neo4j"}
    assert all("healthcheck" in s for s in services.values())
    assert {k: v["condition"] for k, v in services["api"]["depends_on"].items()} == {
        "postgres": "service_healthy", "qdrant": "service_healthy", "neo4j": "service_healthy"}
    assert any(v.endswith(":/var/lib/postgresql/data") for v in services["postgres"]["volumes"])
    named = set(compose["volumes"])
    for service in services.values():
        for volume in service.get("volumes", []):
            assert volume.split(":")[0] in named


def test_api_environment_is_valid_settings() -> None:
    compose = yaml.safe_load((DOCKER / "docker-compose.yml").read_text(encoding="utf-8"))
    env = {k: re.sub(r"\$\{[^}]+\}", "the-key", str(v))
           for k, v in compose["services"]["api"]["environment"].items()}
    settings = load_settings(environ=env)
    assert settings.vector.url == "http://qdrant:6333"
    assert settings.records_url().startswith("postgresql+psycopg://")
    assert settings.graph.provider == "neo4j"
    assert settings.api.api_keys == {"the-key": ["*"]}
    assert not settings.api.auth_disabled


def test_dockerfile_serves_the_api_with_keys() -> None:
    text = (DOCKER / "Dockerfile").read_text(encoding="utf-8")
    assert 'CMD ["hello-memory", "serve", "--host", "0.0.0.0"' in text
    assert "HEALTHCHECK" in text and "/healthz" in text and "EXPOSE 8765" in text


def test_torch_source_is_a_build_arg_defaulting_to_the_cpu_index() -> None:
    """Users get CPU torch from PyTorch's index (PyPI's is the CUDA build); a build can
    point elsewhere (docker/verify-image.sh serves a local wheel) without editing the file."""
    text = (DOCKER / "Dockerfile").read_text(encoding="utf-8")
    args = dict(re.findall(r'^ARG (\w+)="([^"]*)"$', text, flags=re.MULTILINE))
    assert args["TORCH_PIP_ARGS"] == "--index-url https://download.pytorch.org/whl/cpu"
    run = re.search(r"^RUN pip install .*\btorch\b.*$", text, flags=re.MULTILINE)
    assert run is not None and run.group(0).endswith("$TORCH_PIP_ARGS")
    assert text.index("ARG TORCH_PIP_ARGS") < run.start()
    assert re.findall(r"^FROM .*$", text, flags=re.MULTILINE) == ["FROM python:3.11-slim"]


def test_dockerignore_keeps_what_the_image_copies() -> None:
    """Every COPY source reaches the build context; the heavy folders do not."""
    root = DOCKER.parent
    lines = (root / ".dockerignore").read_text(encoding="utf-8").splitlines()
    ignored = {ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")}
    text = (DOCKER / "Dockerfile").read_text(encoding="utf-8")
    sources = [src for line in re.findall(r"^COPY (.+)$", text, flags=re.MULTILINE)
               for src in line.split()[:-1]]
    assert sources and all((root / src).exists() and src not in ignored for src in sources)
    assert {".venv*", ".git", "tests", "benchmarks"} <= ignored


def test_compose_api_env_without_bolt_auth_is_valid_settings() -> None:
    """The compose api env pointed at a Bolt server without auth (as verify-image.sh does
    with FalkorDB): an empty HELLO_MEMORY__GRAPH__USER is a plain empty string, not JSON."""
    compose = yaml.safe_load((DOCKER / "docker-compose.yml").read_text(encoding="utf-8"))
    env = {k: re.sub(r"\$\{[^}]+\}", "the-key", str(v))
           for k, v in compose["services"]["api"]["environment"].items()
           if k not in ("HELLO_MEMORY__GRAPH__PASSWORD", "HELLO_MEMORY__VECTOR__URL")}
    env |= {"HELLO_MEMORY__GRAPH__URI": "bolt://127.0.0.1:7687", "HELLO_MEMORY__GRAPH__USER": ""}
    settings = load_settings(environ=env)
    assert settings.graph.provider == "neo4j" and settings.graph.user == ""
    assert settings.vector.url is None


def test_verify_script_is_executable_bash() -> None:
    script = DOCKER / "verify-image.sh"
    assert script.stat().st_mode & 0o111
    assert script.read_text(encoding="utf-8").startswith("#!/usr/bin/env bash\n")
    subprocess.run(["bash", "-n", str(script)], check=True)


def test_records_url_matches_the_postgres_service() -> None:
    """The API's records.url, and configs/docker.yaml's, name the compose postgres
    service's user, password and database, through psycopg 3 (the image installs the
    postgres extra)."""
    from sqlalchemy.engine import make_url

    compose = yaml.safe_load((DOCKER / "docker-compose.yml").read_text(encoding="utf-8"))
    pg = compose["services"]["postgres"]["environment"]
    api = make_url(compose["services"]["api"]["environment"]["HELLO_MEMORY__RECORDS__URL"])
    docker_yaml = load_settings(DOCKER.parent / "configs" / "docker.yaml", environ={})
    host = make_url(docker_yaml.records_url())
    for url, where in ((api, ("postgres", 5432)), (host, ("localhost", 5432))):
        assert url.drivername == "postgresql+psycopg"
        assert (url.host, url.port) == where
        assert (url.username, url.password, url.database) == (
            pg["POSTGRES_USER"], pg["POSTGRES_PASSWORD"], pg["POSTGRES_DB"])
    assert "5432:5432" in compose["services"]["postgres"]["ports"]
    assert "pg_isready" in str(compose["services"]["postgres"]["healthcheck"]["test"])
    dockerfile = (DOCKER / "Dockerfile").read_text(encoding="utf-8")
    extras = re.search(r'pip install -c constraints/cpu.txt "\.\[([^\]]+)\]"', dockerfile)
    assert extras is not None and "postgres" in extras.group(1).split(",")
