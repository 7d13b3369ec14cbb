"""A real OpenID provider for the sign-on tests: ``tests/js/oidc_provider.mjs`` (the npm package
oidc-provider) on a free loopback port, signing with a key the test holds too — so a test can
mint tokens with the provider's own key that break one rule each."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from joserfc import jwt
from joserfc.jwk import RSAKey

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "js" / "oidc_provider.mjs"
AUDIENCE = "https://signoff.test/api"
"""The resource the provider's access tokens are for (as the script says)."""
KID = "provider-key-1"


@dataclass(frozen=True)
class RunningProvider:
    issuer: str
    key: RSAKey
    """The provider's signing key, private part included."""

    def mint(self, claims: dict[str, Any], *, key: RSAKey | None = None) -> str:
        """A JWT with `claims`, signed with `key` (default: the provider's own)."""
        signer = key or self.key
        return jwt.encode({"alg": "RS256", "kid": signer.kid}, claims, signer)

    def robot_token(self) -> str:
        """A real access token from the provider (client credentials) for `AUDIENCE`."""
        answer = httpx.post(
            f"{self.issuer}/token",
            data={"grant_type": "client_credentials", "scope": "api", "resource": AUDIENCE},
            auth=("robot", "robot-secret"),
        )
        answer.raise_for_status()
        return str(answer.json()["access_token"])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def new_key(kid: str) -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": kid, "use": "sig", "alg": "RS256"})


@contextlib.contextmanager
def provider_running(
    folder: Path, *, port: int, inbox: str, conform: bool = False
) -> Iterator[RunningProvider]:
    """The provider on `port`, its inbox client redirecting to `inbox`'s ``/auth/callback``
    (and back to `inbox` after signing out), until the block ends. `conform`: people's groups
    are only in the userinfo endpoint's answer, not in their ID tokens."""
    key = new_key(KID)
    keys = folder / "provider-jwks.json"
    keys.write_text(json.dumps({"keys": [key.as_dict(private=True)]}))
    log = folder / "provider.log"
    with log.open("w") as errors:
        process = subprocess.Popen(
            ["node", str(SCRIPT), str(port), str(keys), f"{inbox}/auth/callback", f"{inbox}/",
             *(["conform"] if conform else [])],
            stdout=subprocess.PIPE, stderr=errors, text=True,
        )  # fmt: skip
    assert process.stdout is not None
    try:
        said = process.stdout.readline()  # it says nothing more
        assert said.startswith("ready "), said + log.read_text()
        yield RunningProvider(issuer=said.split()[1], key=key)
    finally:
        process.terminate()
        process.wait()
        process.stdout.close()


async def signed_in_by_hand(client: httpx.AsyncClient, name: str, *, after: str = "/") -> str:
    """Sign in as `name` through `client` (signoff's API, at its `base_url`) without a browser:
    the provider's real pages, followed by hand. The callback's answer's location."""
    back = await sign_in_by_hand(client, name, after=after)
    assert back.status_code == 303, back.text
    return str(back.headers["location"])


async def sign_in_by_hand(
    client: httpx.AsyncClient, name: str, *, after: str = "/"
) -> httpx.Response:
    """Sign in as `name` at the provider, as `signed_in_by_hand` does: signoff's answer to the
    provider's redirect back, whatever it is."""
    home = str(client.base_url).rstrip("/") + "/"
    login = await client.get("/auth/login", params={"next": after})
    at = login.headers["location"]
    async with httpx.AsyncClient() as browser:  # the person's browser at the provider
        answer = await browser.get(at)
        while not at.startswith(home):
            if answer.status_code == 200:  # the provider's login page
                answer = await browser.post(at, data={"login": name})
            else:
                at = str(answer.url.join(answer.headers["location"]))
                if not at.startswith(home):
                    answer = await browser.get(at)
    callback = urlsplit(at)
    return await client.get(f"{callback.path}?{callback.query}")
