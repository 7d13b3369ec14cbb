"""Sign-on, the API's side: the provider's access tokens are principals with the roles their
groups map to; every kind of bad token is a 401, logged without its contents; the provider's
keys are fetched again for an unknown key id, at most so often; the session cookie is accepted
from the server's own pages only; and the config's mistakes are named with their place.

Against a real OpenID provider (tests/js/oidc_provider.mjs), one per module."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import typer

from signoff import Policy
from signoff.agent import Agent, ModelTurn, tool
from signoff.cli.serve import checked_auth
from signoff.errors import PolicyError
from signoff.gate import Gate
from signoff.server import Auth, Principal, Service, create_app
from signoff.server.config import load_config
from signoff.server.sso import OidcSettings, SignOn
from signoff.server.sso.provider import REFRESH_SECONDS
from signoff.server.sso.session import LOGIN_COOKIE, SESSION_COOKIE
from signoff.store import SQLStore, open_store
from signoff.testing import ScriptedModel, call
from tests.server.oidc_provider import (
    AUDIENCE,
    ROOT,
    RunningProvider,
    free_port,
    new_key,
    provider_running,
    signed_in_by_hand,
)

SESSION_KEY = "k" * 40
STATIC = {"machine-token": Principal(name="machine", roles=frozenset({"ops"}))}
DOCUMENT = {"rules": [{"ask": "delete_pod", "approvers": ["ops"]}]}


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProvider]:
    folder = tmp_path_factory.mktemp("provider")
    with provider_running(folder, port=free_port(), inbox="http://signoff") as running:
        yield running


def settings_for(provider: RunningProvider) -> OidcSettings:
    return OidcSettings(
        issuer=provider.issuer,
        client_id="inbox",
        client_secret="inbox-secret",
        audience=AUDIENCE,
        session_key=SESSION_KEY,
        roles={"robots": frozenset({"ops"}), "sre": frozenset({"ops", "admin"})},
    )


@tool
def delete_pod(name: str) -> str:
    """Delete a pod."""
    return f"deleted {name}"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLStore]:
    async with open_store(f"sqlite:///{tmp_path / 'signoff.db'}") as opened:
        yield opened


@contextlib.asynccontextmanager
async def served(
    store: SQLStore, sign_on: SignOn, *, started: bool = True, hosts: tuple[str, ...] = ()
) -> AsyncIterator[httpx.AsyncClient]:
    """An in-process client of the API with sign-on; `started`: the app's start-up has run
    (it fetches the provider's keys); `hosts`: the config's allowed_hosts."""
    turns = [ModelTurn(tool_calls=(call("delete_pod", name="a"),)), ModelTurn(text="done")]
    service = Service(
        store=store,
        gate=Gate(Policy.from_dict(DOCUMENT), store),
        agents=[Agent(name="ops", model=ScriptedModel(turns), tools=[delete_pod])],
        poll_interval=0.05,
    )
    app = create_app(service, Auth(tokens=STATIC, sign_on=sign_on, hosts=frozenset(hosts)))
    transport = httpx.ASGITransport(app=app)
    async with contextlib.AsyncExitStack() as stack:
        if started:
            await stack.enter_async_context(app.router.lifespan_context(app))
        client = httpx.AsyncClient(transport=transport, base_url="http://signoff")
        yield await stack.enter_async_context(client)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_the_provider_s_token_names_a_principal_with_the_roles_its_groups_give(
    provider: RunningProvider, store: SQLStore
):
    token = provider.robot_token()
    async with served(store, SignOn(settings_for(provider))) as client:
        me = await client.get("/v1/me", headers=bearer(token))
        assert me.json() == {"name": "robot", "roles": ["ops"], "authenticated": True}
        machine = await client.get("/v1/me", headers=bearer("machine-token"))
        assert machine.json()["name"] == "machine"  # static tokens stay, for machines

        started = await client.post(
            "/v1/threads/t1/runs",
            params={"wait": 10},
            json={"agent": "ops", "input": "go"},
            headers=bearer(token),
        )
        assert started.status_code == 201, started.text
        [approval_id] = started.json()["pending_approvals"]
        decided = await client.post(
            f"/v1/approvals/{approval_id}/decision",
            json={"kind": "approve"},
            headers=bearer(token),
        )
        assert decided.status_code == 200, decided.text
        assert decided.json()["decided_by"] == "robot"  # an ops approver, by its groups


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unsigned(header: dict[str, Any], claims: dict[str, Any]) -> str:
    return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"


def _hmac_with_public_key(provider: RunningProvider, claims: dict[str, Any]) -> str:
    """HS256 with the provider's public key (as a PEM) for the secret: the classic confusion."""
    secret = provider.key.as_pem(private=False)
    signing_input = _unsigned({"alg": "HS256", "kid": provider.key.kid, "typ": "JWT"}, claims)
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(signature)}"


def good_claims(provider: RunningProvider, **changed: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        "iss": provider.issuer,
        "aud": AUDIENCE,
        "sub": "mallory",
        "groups": ["sre"],
        "iat": now,
        "exp": now + 600,
    }
    return {k: v for k, v in (claims | changed).items() if v is not None}


BAD_TOKENS: dict[str, Callable[[RunningProvider], str]] = {
    "expired": lambda p: p.mint(
        good_claims(p, iat=int(time.time()) - 7200, exp=int(time.time()) - 3600)
    ),
    "not valid yet": lambda p: p.mint(good_claims(p, nbf=int(time.time()) + 3600)),
    "wrong issuer": lambda p: p.mint(good_claims(p, iss="https://login.example.com")),
    "wrong audience": lambda p: p.mint(good_claims(p, aud="https://elsewhere.test/api")),
    "no expiry": lambda p: p.mint(good_claims(p, exp=None)),
    "alg none": lambda p: _unsigned({"alg": "none", "typ": "JWT"}, good_claims(p)) + ".",
    "HS256 with the public key": lambda p: _hmac_with_public_key(p, good_claims(p)),
    "unknown kid": lambda p: p.mint(good_claims(p), key=new_key("nobody-knows")),
    "another provider's key": lambda p: p.mint(good_claims(p), key=new_key(p.key.kid or "")),
    "not a JWT": lambda p: "eyJhbGciOi.nope",
    "a machine's name": lambda p: p.mint(good_claims(p, sub="machine")),
    "an unverified email as its only name": lambda p: p.mint(
        good_claims(p, sub=None, email="ada@example.com", email_verified=False)
    ),
}
REASONS = {
    "expired": "expired",
    "not valid yet": "not valid yet",
    "wrong issuer": "wrong iss",
    "wrong audience": "wrong aud",
    "no expiry": "a claim is missing (exp)",
    "alg none": "algorithm 'none' is not accepted",
    "HS256 with the public key": "algorithm 'HS256' is not accepted",
    "unknown kid": "unknown key id 'nobody-knows'",
    "another provider's key": "bad signature",
    "not a JWT": "not a JWS compact token",
    "a machine's name": "'machine' is the name of one of auth.tokens' principals",
    "an unverified email as its only name": "the token names no principal",
}


@pytest.mark.parametrize("kind", list(BAD_TOKENS))
async def test_a_bad_token_gets_401_and_is_logged_without_its_contents(
    provider: RunningProvider, store: SQLStore, caplog: pytest.LogCaptureFixture, kind: str
):
    token = BAD_TOKENS[kind](provider)
    caplog.set_level(logging.INFO, logger="signoff.server.sso")
    async with served(store, SignOn(settings_for(provider))) as client:
        me = await client.get("/v1/me", headers=bearer(token))
        assert me.status_code == 401, me.text
        posted = await client.post(  # refused before its body is read
            "/v1/threads/t1/runs", json={"agent": "ops", "input": "go"}, headers=bearer(token)
        )
        assert posted.status_code == 401, posted.text
        assert await store.list_runs(limit=5) == []
    said = [r for r in caplog.records if "refused a bearer token" in r.getMessage()]
    assert said and all(r.levelno == logging.WARNING for r in said), caplog.text  # shown
    refusals = [r.getMessage() for r in said]
    assert all(REASONS[kind] in refusal for refusal in refusals), refusals
    assert token not in caplog.text


async def test_an_unknown_key_has_the_keys_fetched_once_and_no_more_for_a_while(
    provider: RunningProvider, store: SQLStore
):
    known = {"keys": [provider.key.as_dict(private=False)]}
    sign_on = SignOn(settings_for(provider), keys=known)  # kept from before: none fetched yet
    async with served(store, sign_on, started=False) as client:
        for number in range(5):  # a flood of made-up key ids
            stranger = provider.mint(good_claims(provider), key=new_key(f"made-up-{number}"))
            assert (await client.get("/v1/me", headers=bearer(stranger))).status_code == 401
        assert sign_on.provider.key_fetches == 1  # the first: then none for REFRESH_SECONDS
        assert REFRESH_SECONDS >= 10
        me = await client.get("/v1/me", headers=bearer(provider.robot_token()))
        assert me.status_code == 200  # the provider's own key, still known


async def test_a_key_the_server_has_not_seen_is_fetched_and_the_token_accepted(
    provider: RunningProvider, store: SQLStore
):
    rotated = {"keys": [new_key("retired-key").as_dict(private=False)]}
    sign_on = SignOn(settings_for(provider), keys=rotated)  # the keys as it last knew them
    async with served(store, sign_on, started=False) as client:
        me = await client.get("/v1/me", headers=bearer(provider.robot_token()))
        assert me.status_code == 200, me.text
        assert me.json()["name"] == "robot"
        assert sign_on.provider.key_fetches == 1
        assert set(sign_on.provider.keys) == {provider.key.kid}


async def test_the_session_cookie_is_taken_only_from_the_server_s_own_pages(
    provider: RunningProvider, store: SQLStore
):
    sign_on = SignOn(settings_for(provider))
    ada = Principal(name="ada", roles=frozenset({"ops"}))
    cookie = {"Cookie": f"{SESSION_COOKIE}={sign_on.sealer.session(ada, seconds=600)}"}
    run = {"agent": "ops", "input": "go"}
    # An allowed host's other port or scheme is another site's page, with the same cookie.
    async with served(store, sign_on, hosts=("signoff",)) as client:
        me = await client.get("/v1/me", headers=cookie)
        assert me.json() == {"name": "ada", "roles": ["ops"], "authenticated": True}
        for origin in ("http://evil.test", "http://signoff:8080", "https://signoff", "null"):
            refused = await client.post(
                "/v1/threads/t1/runs", json=run, headers=cookie | {"Origin": origin}
            )
            assert refused.status_code == 403, (origin, refused.text)
        no_origin = await client.post("/v1/threads/t1/runs", json=run, headers=cookie)
        assert no_origin.status_code == 403
        assert await store.list_runs(limit=5) == []
        own = await client.post(
            "/v1/threads/t1/runs", json=run, headers=cookie | {"Origin": "http://signoff"}
        )
        assert own.status_code == 201, own.text
        assert own.json()["started_by"] == "ada"

        forged = {"Cookie": f"{SESSION_COOKIE}={sign_on.sealer.session(ada, seconds=600)}x"}
        assert (await client.get("/v1/me", headers=forged)).status_code == 401
        stale = {"Cookie": f"{SESSION_COOKIE}={sign_on.sealer.session(ada, seconds=-1)}"}
        assert (await client.get("/v1/me", headers=stale)).status_code == 401


async def test_sign_in_starts_at_the_provider_with_pkce_and_comes_back_only_to_this_site(
    provider: RunningProvider, store: SQLStore
):
    async with served(store, SignOn(settings_for(provider))) as client:
        info = await client.get("/auth/info")
        assert info.json() == {"sign_on": {"name": "127.0.0.1", "login": "/auth/login"}}
        login = await client.get("/auth/login", params={"next": "//evil.test/x"})
        assert login.status_code in (302, 307), login.text
        target = urlsplit(login.headers["location"])
        assert f"{target.scheme}://{target.netloc}" == provider.issuer
        asked = {k: v[0] for k, v in parse_qs(target.query).items()}
        assert asked["code_challenge_method"] == "S256"
        assert asked["client_id"] == "inbox"
        assert asked["redirect_uri"] == "http://signoff/auth/callback"
        assert {"state", "nonce", "code_challenge"} <= asked.keys()
        set_cookie = login.headers["set-cookie"].lower()
        assert set_cookie.startswith(f"{LOGIN_COOKIE}=")
        assert "httponly" in set_cookie and "samesite=lax" in set_cookie
        assert "path=/auth" in set_cookie and "secure" not in set_cookie  # plain http here

        forged_state = await client.get(
            "/auth/callback", params={"code": "x", "state": "not-" + asked["state"]}
        )
        assert forged_state.status_code == 400
        mixed_up = await client.get(  # RFC 9207: the answer names another issuer
            "/auth/callback",
            params={"code": "x", "state": asked["state"], "iss": "https://login.example.com"},
        )
        assert mixed_up.status_code == 400
        assert "another provider" in mixed_up.json()["detail"]
        refused = await client.get(
            "/auth/callback", params={"error": "access_denied\r\n<b>", "state": asked["state"]}
        )
        assert refused.status_code == 401
        assert "(access_denied???b?)" in refused.json()["detail"]
        bad_code = await client.get(  # the real provider refuses a made-up code
            "/auth/callback", params={"code": "made-up", "state": asked["state"]}
        )
        assert bad_code.status_code == 401
        assert "invalid_grant" in bad_code.json()["detail"]
        assert "set-cookie" not in bad_code.headers
        client.cookies.clear()
        no_flow = await client.get("/auth/callback", params={"code": "x", "state": "y"})
        assert no_flow.status_code == 400
        assert "not started here" in no_flow.json()["detail"]


def test_serve_refuses_no_auth_with_sign_on(provider: RunningProvider):
    with pytest.raises(typer.BadParameter, match="--no-auth would let everyone past it"):
        checked_auth(
            Path("signoff.yaml"),
            {},
            host="127.0.0.1",
            no_auth=True,
            oidc=settings_for(provider),
        )
    auth = checked_auth(Path("signoff.yaml"), {}, host="0.0.0.0", no_auth=False,
                        oidc=settings_for(provider))  # fmt: skip
    assert auth.sign_on is not None and auth.tokens == {}


CONFIG = """\
auth:
  oidc:
    issuer: {issuer}
    client_id: inbox
    audience: https://signoff.test/api
    roles: {{sre: [ops, admin], visitors: []}}
    session_key_env: {key_env}
    sessions_hours: 8
default: ask
"""


@pytest.mark.parametrize(
    ("issuer", "key_env", "problems"),
    [
        (
            "https://login.example.com",
            "SIGNOFF_TEST_SESSION_KEY",
            ["8:5: auth.oidc.sessions_hours: unknown key 'sessions_hours' in auth.oidc; "
             "did you mean 'session_hours'?"],
        ),
        (
            "http://login.example.com",
            "SIGNOFF_TEST_NO_SUCH_VARIABLE",
            ["3:13: auth.oidc.issuer: auth.oidc.issuer must be an https:// URL",
             "7:22: auth.oidc.session_key_env: the environment variable "
             "SIGNOFF_TEST_NO_SUCH_VARIABLE is not set"],
        ),
        (
            "https://login.example.com",
            "SIGNOFF_TEST_SHORT_KEY",
            ["7:22: auth.oidc.session_key_env: the session key must have at least 32 characters"],
        ),
    ],
)  # fmt: skip
def test_config_mistakes_are_named_with_their_place(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    issuer: str,
    key_env: str,
    problems: list[str],
):
    monkeypatch.setenv("SIGNOFF_TEST_SESSION_KEY", SESSION_KEY)
    monkeypatch.setenv("SIGNOFF_TEST_SHORT_KEY", "short")
    path = tmp_path / "signoff.yaml"
    path.write_text(CONFIG.format(issuer=issuer, key_env=key_env))
    with pytest.raises(PolicyError) as raised:
        load_config(path)
    said = str(raised.value)
    for problem in problems:
        assert problem in said, said


def test_a_good_config_gives_the_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SIGNOFF_TEST_SESSION_KEY", SESSION_KEY)
    path = tmp_path / "signoff.yaml"
    good = CONFIG.replace("sessions_hours", "session_hours")
    path.write_text(
        good.format(issuer="https://login.example.com", key_env="SIGNOFF_TEST_SESSION_KEY")
    )
    oidc = load_config(path).oidc
    assert oidc is not None
    assert oidc.issuer == "https://login.example.com"
    assert oidc.roles_of(["sre", "visitors", "strangers"]) == {"ops", "admin"}
    assert oidc.roles_of("visitors") == frozenset()
    assert oidc.session_hours == 8
    assert SESSION_KEY not in repr(oidc)


def test_the_documented_config_is_one_signoff_serve_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    section = text.split("\n## Sign-in\n", 1)[1].split("\n## ", 1)[0]
    [body] = re.findall(r"(?<!-->\n)```yaml\n(.*?)```", section, re.S)  # not a trial's file
    for variable in ("SIGNOFF_OIDC_SECRET", "SIGNOFF_SESSION_KEY", "SIGNOFF_TOKEN_CI"):
        monkeypatch.setenv(variable, f"{variable.lower()}-{SESSION_KEY}")
    path = tmp_path / "signoff.yaml"
    path.write_text(body)
    config = load_config(path)
    assert config.oidc is not None
    assert config.oidc.client_secret == f"signoff_oidc_secret-{SESSION_KEY}"
    assert config.oidc.shown_name == "Example SSO"
    assert config.oidc.roles_of(["signoff-admins", "sre", "guests"]) == {"admin", "ops"}
    assert [p.name for p in config.tokens.values()] == ["ci-bot"]


async def test_behind_tls_the_cookies_are_secure_and_the_public_origin_is_the_server_s_own(
    provider: RunningProvider, store: SQLStore
):
    public = "https://signoff.example.com"
    settings = settings_for(provider)
    behind = OidcSettings(
        **{k: getattr(settings, k) for k in ("issuer", "client_id", "session_key", "audience")},
        redirect_uri=f"{public}/auth/callback",
    )
    sign_on = SignOn(behind)
    ada = Principal(name="ada", roles=frozenset({"ops"}))
    cookie = {"Cookie": f"{SESSION_COOKIE}={sign_on.sealer.session(ada, seconds=600)}"}
    async with served(store, sign_on) as client:  # plain http from the proxy to signoff
        login = await client.get("/auth/login")
        asked = parse_qs(urlsplit(login.headers["location"]).query)
        assert asked["redirect_uri"] == [f"{public}/auth/callback"]
        assert "secure" in login.headers["set-cookie"].lower()
        run = {"agent": "ops", "input": "go"}
        own = await client.post(
            "/v1/threads/t1/runs", json=run, headers=cookie | {"Origin": public}
        )
        assert own.status_code == 201, own.text
        logout = await client.post("/auth/logout", headers=cookie | {"Origin": public})
        assert logout.status_code == 200, logout.text
        ending = urlsplit(logout.json()["next"])
        assert f"{ending.scheme}://{ending.netloc}{ending.path}" == f"{provider.issuer}/session/end"
        assert parse_qs(ending.query)["post_logout_redirect_uri"] == [f"{public}/"]
        cleared = logout.headers["set-cookie"].lower()
        assert cleared.startswith(f"{SESSION_COOKIE}=") and "max-age=0" in cleared
        assert "secure" in cleared


async def test_the_whole_code_flow_signs_a_person_in_once(
    provider: RunningProvider, store: SQLStore
):
    async with served(store, SignOn(settings_for(provider))) as client:
        assert await signed_in_by_hand(client, "ada", after="/#/runs") == "/#/runs"
        me = await client.get("/v1/me")  # the session cookie, kept by the client
        assert me.json() == {"name": "ada", "roles": ["admin", "ops"], "authenticated": True}
        again = await client.get("/auth/callback", params={"code": "x", "state": "y"})
        assert again.status_code == 400  # the sign-in's own cookie is gone with its use
