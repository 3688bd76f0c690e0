"""``wikimem search --server URL``: the same search, answered by a ``wikimem serve`` elsewhere."""
from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote, urlsplit

from ..errors import UsageError, WikimemError

TIMEOUT_S = 30.0


def _vault_url(server: str, token: str | None, client) -> str:
    """``server`` as the URL of one vault's API: given whole (…/v1/vaults/NAME), from the web page's
    address (…/v/NAME/), or the server's only vault this token sees."""
    parts = urlsplit(server)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"--server {server!r}: give the server's URL, e.g. http://team-box:8765")
    base = f"{parts.scheme}://{parts.netloc}"
    segments = [s for s in parts.path.split("/") if s]
    if len(segments) >= 3 and segments[:2] == ["v1", "vaults"]:
        return f"{base}/v1/vaults/{quote(segments[2], safe='')}"
    if len(segments) >= 2 and segments[0] == "v":
        return f"{base}/v1/vaults/{quote(segments[1], safe='')}"
    vaults = _get(client, f"{base}/v1/vaults", {})["vaults"]
    if len(vaults) != 1:
        names = ", ".join(v["name"] for v in vaults) or "none"
        raise UsageError(f"{base} serves {len(vaults)} vaults this token sees ({names}): name one, "
                         f"e.g. --server {base}/v/NAME")
    return f"{base}/v1/vaults/{quote(vaults[0]['name'], safe='')}"


def _get(client, url: str, params: dict[str, Any]) -> dict[str, Any]:
    import httpx
    try:
        r = client.get(url, params=params)
    except httpx.HTTPError as exc:
        raise WikimemError(f"cannot reach {url}: {exc}") from None
    try:
        data = r.json()
    except ValueError:
        data = {"error": r.text[:200]}
    if r.status_code == 401:
        raise UsageError(f"{url}: the server wants a valid token (--token or WIKIMEM_TOKEN): {data.get('error', '')}")
    if r.status_code >= 400:
        error = UsageError if r.status_code < 500 else WikimemError
        raise error(f"{url}: {r.status_code} {data.get('error', '')}")
    return data


def search(server: str, token: str | None, query: str, **params: Any) -> dict[str, Any]:
    """The server's search result (the JSON API's), with ``took_ms`` and ``url`` added."""
    import httpx
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    wanted = {"q": query, **{k: v for k, v in params.items() if v not in (None, False, [], ())}}
    started = time.perf_counter()
    with httpx.Client(headers=headers, timeout=TIMEOUT_S) as client:
        url = _vault_url(server, token, client)
        data = _get(client, url + "/search", wanted)
    data["took_ms"] = (time.perf_counter() - started) * 1000
    data["url"] = url
    return data
