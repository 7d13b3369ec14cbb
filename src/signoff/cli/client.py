"""How a command talks to a signoff server: one JSON request with the bearer token, over the
standard library's HTTP client, and the error each status of its answer says."""

from __future__ import annotations

from json import dumps, loads
from typing import Any
from urllib.parse import urlencode, urlsplit

from signoff.errors import ConflictError, ForbiddenError, NotFoundError, SignoffError
from signoff.types import Decision, decision_to_dict

__all__ = ["from_server", "on_server", "through_server"]


def on_server(
    server: str,
    token: str | None,
    method: str,
    path: str,
    *,
    params: dict[str, Any] | None = None,
    json: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The body of the server's 200 answer to `method path`; else the error its status says.
    A parameter that is None is left out; True and False are sent as ``true`` and ``false``."""
    if urlsplit(server).scheme not in ("http", "https"):
        raise SignoffError(f"{server!r} is not a server's URL: give one like http://HOST:PORT")
    url = f"{server.rstrip('/')}{path}"
    if params:
        query = {k: _query_value(v) for k, v in params.items() if v is not None}
        url += "?" + urlencode(query)
    headers = {"Accept": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = None
    if json is not None:
        body = dumps(json).encode()
        headers["Content-Type"] = "application/json"
    status, answer = _send(server, method, url, body, headers)
    return _answer(server, status, answer)


def from_server(
    server: str, token: str | None, path: str, params: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What the server answers to `GET path`."""
    return on_server(server, token, "GET", path, params=params)


def through_server(
    server: str,
    token: str | None,
    approval_id: str,
    decision: Decision,
    *,
    version: int | None = None,
) -> dict[str, Any]:
    """Take `decision` on the server, made on `version` of the approval (None: names none)."""
    path = f"/v1/approvals/{approval_id}/decision"
    body = decision_to_dict(decision) | ({} if version is None else {"version": version})
    return on_server(server, token, "POST", path, json=body)


def _query_value(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _send(
    server: str, method: str, url: str, body: bytes | None, headers: dict[str, str]
) -> tuple[int, bytes]:
    """The status and body of the answer. The standard library's client, not httpx: it loads
    in a sixth of the time (a command's start), and is there without the server extra."""
    import http.client
    import urllib.error
    import urllib.request

    class Unredirected(urllib.request.HTTPRedirectHandler):
        # A redirect is answered as its status: the token is never sent on to another address.
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(Unredirected)
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:  # an answer, with a status other than 2xx
        with error:
            return error.code, error.read()
    except urllib.error.URLError as exc:
        raise SignoffError(f"cannot reach {server}: {exc.reason}") from None
    except (OSError, http.client.HTTPException) as exc:  # a timeout, a connection cut
        raise SignoffError(f"cannot reach {server}: {str(exc) or type(exc).__name__}") from None


def _answer(server: str, status: int, body: bytes) -> dict[str, Any]:
    """The body of a 200, or the error the status says."""
    try:
        answer: dict[str, Any] = loads(body)
    except ValueError:
        answer = {"detail": body.decode(errors="replace")[:200]}  # a proxy's page, not the API's
    if status == 200:
        return answer
    said = f"{server} said {status}: {answer.get('detail', answer)}"
    if status == 409:
        from signoff.channels.sources import stale_error  # asyncio: loaded when needed

        stale = stale_error(answer, message=said)
        if stale is not None:
            raise stale
    kind = {404: NotFoundError, 409: ConflictError, 403: ForbiddenError}.get(status, SignoffError)
    raise kind(said)
