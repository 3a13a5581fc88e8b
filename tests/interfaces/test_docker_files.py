"""The Docker files hold together: every service has a health check, the API waits for
healthy servers, and the API's environment is valid hello-memory settings."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from hello_memory.config import load_settings

DOCKER = Path(__file__).resolve().parents[2] / "docker"


def test_compose_services_health_and_volumes() -> None:
    compose = yaml.safe_load((DOCKER / "docker-compose.yml").read_text(encoding="utf-8"))
    services = compose["services"]
    assert set(services) == {"api", "qdrant", "neo4j"}
    assert all("healthcheck" in s for s in services.values())
    assert {k: v["condition"] for k, v in services["api"]["depends_on"].items()} == {
        "qdrant": "service_healthy", "neo4j": "service_healthy"}
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
    assert settings.graph.provider == "neo4j"
    assert settings.api.api_keys == {"the-key": ["*"]}
    assert not settings.api.auth_disabled


def test_dockerfile_serves_the_api_with_keys() -> None:
    text = (DOCKER / "Dockerfile").read_text(encoding="utf-8")
    assert 'CMD ["hello-memory", "serve", "--host", "0.0.0.0"' in text
    assert "HEALTHCHECK" in text and "/healthz" in text and "EXPOSE 8765" in text
