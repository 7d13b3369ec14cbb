"""Single sign-on through an OpenID Connect provider (ARCHITECTURE §8): people sign in to the web
inbox (authorization code flow with PKCE) and the API accepts the provider's access tokens;
roles come from a claim of theirs (groups) through the config's mapping. Static tokens remain
for machines.

- `settings`: the config's ``auth.oidc`` section;
- `provider`: discovery, the provider's keys, token checks;
- `session`: the sealed cookies;
- `sign_on`: who a request is;
- `routes`: ``/auth/login``, ``/auth/callback``, ``/auth/logout``, and the cookie's CSRF guard.
"""

from signoff.server.sso.settings import OidcSettings, read_oidc
from signoff.server.sso.sign_on import SignOn

__all__ = ["OidcSettings", "SignOn", "read_oidc"]
