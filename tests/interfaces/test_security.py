"""Key -> namespace rules shared by the REST API and the MCP server (no model needed)."""

from __future__ import annotations

import pytest

from hello_memory.config import ApiSettings, load_settings
from hello_memory.errors import (
    BackendUnavailableError,
    ConfigError,
    EmptyContentError,
    NamespaceRequiredError,
    NotFoundError,
    StoreError,
)
from hello_memory.interfaces.mcp import grants_for
from hello_memory.interfaces.rest.problems import AccessDenied, problem_for, status_for
from hello_memory.interfaces.rest.security import Access, check_bind, is_loopback, namespace_allowed
from hello_memory.llm.base import LLMUnavailableError


def test_namespace_patterns() -> None:
    assert namespace_allowed("alice", ["alice"])
    assert not namespace_allowed("alicia", ["alice"])
    assert namespace_allowed("team", ["team/*"]) and namespace_allowed("team/a/b", ["team/*"])
    assert not namespace_allowed("teams", ["team/*"])
    assert namespace_allowed("anything", ["*"]) and not namespace_allowed("x", [])


def test_access_check() -> None:
    access = Access(ApiSettings(api_keys={"k": ["alice"]}))
    assert access.check("alice", "k", "203.0.113.9") == "alice"
    with pytest.raises(AccessDenied) as denied:
        access.check("bob", "k", "127.0.0.1")
    assert denied.value.status == 403
    for key in (None, "K", "k "):
        with pytest.raises(AccessDenied) as denied:
            access.check("alice", key, "127.0.0.1")
        assert denied.value.status == 401
    with pytest.raises(NamespaceRequiredError):
        access.check("  ", "k", "127.0.0.1")
    # namespace left out (None): the key's one exact grant, else a namespace is required
    assert access.check(None, "k", "203.0.113.9") == "alice"
    for grants in (["alice", "bob"], ["team/*"], ["*"]):
        several = Access(ApiSettings(api_keys={"k": grants}))
        with pytest.raises(NamespaceRequiredError, match="more than one namespace"):
            several.check(None, "k", "127.0.0.1")
        assert several.check("team/x" if grants == ["team/*"] else "alice", "k",
                             "127.0.0.1")
    with pytest.raises(AccessDenied) as denied:
        access.check(None, None, "127.0.0.1")  # the key first: 401, not 400
    assert denied.value.status == 401
    open_local = Access(ApiSettings(auth_disabled=True))
    with pytest.raises(NamespaceRequiredError, match="auth is disabled"):
        open_local.check(None, None, "127.0.0.1")
    assert open_local.check("any", None, "127.0.0.1") == "any"
    assert open_local.check("any", None, "::1") == "any"
    with pytest.raises(AccessDenied):
        open_local.check("any", None, "192.168.1.20")


def test_loopback_and_bind() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback(None) and not is_loopback("example")
    check_bind(ApiSettings(auth_disabled=True), "127.0.0.1")
    check_bind(ApiSettings(), "0.0.0.0")
    with pytest.raises(ConfigError, match="loopback"):
        check_bind(ApiSettings(auth_disabled=True), "0.0.0.0")


def test_error_statuses_in_one_place() -> None:
    assert status_for(EmptyContentError("x"))[0] == 400
    assert status_for(NamespaceRequiredError("x"))[:2] == (400, "namespace-required")
    assert status_for(NotFoundError("x"))[0] == 404
    assert status_for(ConfigError("x"))[0] == 501
    assert status_for(BackendUnavailableError("x"))[0] == 503
    assert status_for(LLMUnavailableError("x"))[1] == "llm-unavailable"
    assert status_for(StoreError("x"))[0] == 500
    body = problem_for(NotFoundError("no memory 'a'"))
    assert body["detail"] == "no memory 'a'" and body["error"] == "NotFoundError"


def test_mcp_grants_fail_closed() -> None:
    keyed = load_settings(environ={}, api={"api_keys": {"k": ["team/*"]}})
    assert grants_for(keyed, api_key="k") == ["team/*"]
    assert grants_for(keyed, namespaces=["alice"]) == ["alice"]
    with pytest.raises(ConfigError, match="unknown API key"):
        grants_for(keyed, api_key="nope")
    with pytest.raises(ConfigError, match="--namespace"):
        grants_for(keyed)
    assert grants_for(load_settings(environ={}, api={"auth_disabled": True})) == ["*"]
