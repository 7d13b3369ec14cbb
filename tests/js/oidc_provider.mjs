// A real OpenID provider (oidc-provider, certified) on loopback, for the sign-on tests:
//   node oidc_provider.mjs PORT JWKS_FILE REDIRECT_URI POST_LOGOUT_URI [conform]
// It signs with the private keys in JWKS_FILE (the test writes them, so it can also mint tokens
// with the provider's own key that break one rule each), and says "ready ISSUER" once it listens.
//
// - client "inbox" (secret "inbox-secret"): authorization code with PKCE, for the web inbox;
// - client "robot" (secret "robot-secret"): client credentials, for the API's machine tests;
// - access tokens for the resource AUDIENCE are JWTs (resource indicators);
// - people sign in on a bare login page (any name, no password: a test provider) and have the
//   groups of GROUPS in their ID token — or, with "conform", only at the userinfo endpoint (as
//   OIDC Core has it for an ID token issued with an access token); consent is given at once.

import { readFileSync } from "node:fs";
import http from "node:http";
import Provider from "oidc-provider";

const [port, jwksFile, redirectUri, postLogoutUri, mode] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;
const AUDIENCE = "https://signoff.test/api";
const GROUPS = { ada: ["sre", "signoff-admins"], vic: ["visitors"] };
const ROBOT_GROUPS = ["robots"];

const page = (title, body) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`;

const provider = new Provider(issuer, {
  jwks: JSON.parse(readFileSync(jwksFile, "utf8")),
  clients: [
    {
      client_id: "inbox",
      client_secret: "inbox-secret",
      redirect_uris: [redirectUri],
      post_logout_redirect_uris: [postLogoutUri],
      grant_types: ["authorization_code"],
      response_types: ["code"],
    },
    {
      client_id: "robot",
      client_secret: "robot-secret",
      grant_types: ["client_credentials"],
      redirect_uris: [],
      response_types: [],
    },
  ],
  claims: { openid: ["sub"], profile: ["preferred_username", "groups"], email: ["email"] },
  conformIdTokenClaims: mode === "conform", // false: the groups go into the ID token too
  findAccount: async (_ctx, sub) => ({
    accountId: sub,
    claims: async () => ({
      sub,
      preferred_username: sub,
      email: `${sub}@example.test`,
      groups: GROUPS[sub] ?? [],
    }),
  }),
  extraTokenClaims: async (_ctx, token) =>
    token.kind === "ClientCredentials" ? { groups: ROBOT_GROUPS } : undefined,
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // A client names the resource it wants (the robot does); the inbox's access token is
      // for the userinfo endpoint.
      defaultResource: (_ctx, _client, oneOf) => oneOf,
      getResourceServerInfo: (_ctx, resource) => {
        if (resource !== AUDIENCE) throw new Error(`unknown resource ${resource}`);
        return {
          scope: "api",
          audience: AUDIENCE,
          accessTokenFormat: "jwt",
          accessTokenTTL: 600,
          jwt: { sign: { alg: "RS256" } },
        };
      },
    },
    rpInitiatedLogout: {
      enabled: true,
      logoutSource: async (ctx, form) => {
        ctx.body = page(
          "Sign out",
          `${form}<button type="submit" form="op.logoutForm" value="yes" name="logout">Yes, sign me out</button>`,
        );
      },
    },
  },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
});

// The bare login page, and consent given at once.
async function interaction(req, res, uid) {
  const details = await provider.interactionDetails(req, res);
  if (req.method === "POST") {
    let body = "";
    for await (const chunk of req) body += chunk;
    const login = new URLSearchParams(body).get("login");
    return provider.interactionFinished(req, res, { login: { accountId: login } }, {
      mergeWithLastSubmission: false,
    });
  }
  if (details.prompt.name === "login") {
    res.setHeader("Content-Type", "text/html; charset=utf-8");
    return res.end(
      page(
        "Test provider: sign in",
        `<form method="post" action="/interaction/${uid}"><label>Name <input name="login" autofocus></label>` +
          `<button type="submit">Sign in</button></form>`,
      ),
    );
  }
  const { params, prompt, session } = details;
  const grant = new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(" "));
  if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
  for (const [indicator, scope] of Object.entries(prompt.details.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scope.join(" "));
  }
  const grantId = await grant.save();
  return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

const handle = provider.callback();
http
  .createServer((req, res) => {
    const found = req.url.match(/^\/interaction\/([^/?]+)$/);
    if (!found) return handle(req, res);
    interaction(req, res, found[1]).catch((error) => {
      res.statusCode = 500;
      res.end(String(error));
    });
  })
  .listen(Number(port), "127.0.0.1", () => console.log(`ready ${issuer}`));
