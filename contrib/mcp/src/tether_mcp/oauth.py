"""OAuth for streamable-HTTP MCP servers, through the SDK's ``OAuthClientProvider``.

Tokens and the dynamically registered client live in ``<data dir>/mcp/oauth/NAME.json``:
the directory is created owner-only (0700) and the file is written owner-only (0600),
atomically, so a crash never leaves half a token file. The first sign-in opens the
authorization page in a browser (and prints its address on stderr) and waits for the
redirect on ``http://127.0.0.1:<oauth_redirect_port>/callback``; ``tether mcp login NAME``
does that ahead of time. Afterwards the SDK refreshes tokens as needed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

if TYPE_CHECKING:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken

    from .settings import ServerSettings

__all__ = ["FileTokenStorage", "oauth_provider"]

SIGN_IN_TIMEOUT = 300.0


class FileTokenStorage:
    """The SDK's ``TokenStorage`` on one owner-only JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, key: str, value: dict[str, Any]) -> None:
        data = self._read()
        data[key] = value
        directory = self.path.parent
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(directory, 0o700)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".token-", suffix=".json")
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(data, file)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        raw = (await asyncio.to_thread(self._read)).get("tokens")
        return OAuthToken.model_validate(raw) if raw else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await asyncio.to_thread(self._write, "tokens", tokens.model_dump(mode="json"))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        raw = (await asyncio.to_thread(self._read)).get("client_info")
        return OAuthClientInformationFull.model_validate(raw) if raw else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await asyncio.to_thread(
            self._write, "client_info", client_info.model_dump(mode="json", exclude_none=True)
        )


def token_path(oauth_dir: Path, name: str) -> Path:
    return oauth_dir / f"{name}.json"


def oauth_provider(
    name: str, settings: ServerSettings, oauth_dir: Path | None
) -> OAuthClientProvider:
    """An ``httpx2.Auth`` signing requests to server ``name`` with its stored tokens."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata
    from pydantic import AnyUrl

    if oauth_dir is None:
        from tether.config import data_dir

        oauth_dir = data_dir() / "mcp" / "oauth"
    assert settings.url is not None
    redirect = f"http://127.0.0.1:{settings.oauth_redirect_port}/callback"
    metadata = OAuthClientMetadata(
        client_name="tether",
        redirect_uris=[AnyUrl(redirect)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
        scope=settings.oauth_scope,
    )
    return OAuthClientProvider(
        server_url=settings.url,
        client_metadata=metadata,
        storage=FileTokenStorage(token_path(oauth_dir, name)),
        redirect_handler=_open_browser,
        callback_handler=lambda: _wait_for_redirect(settings.oauth_redirect_port),
    )


async def _open_browser(url: str) -> None:
    print(f"Sign in to continue: {url}", file=sys.stderr, flush=True)
    import webbrowser

    await asyncio.to_thread(webbrowser.open, url)


async def _wait_for_redirect(port: int) -> AuthorizationCodeResult:
    """Serve one request on the loopback redirect address and take the code from it."""
    from mcp.shared.auth import AuthorizationCodeResult

    from .errors import McpError

    result: asyncio.Future[dict[str, list[str]]] = asyncio.get_running_loop().create_future()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request_line = (await reader.readline()).decode("latin-1").split(" ")
        query = parse_qs(urlsplit(request_line[1] if len(request_line) > 1 else "").query)
        body = b"Signed in. You can close this tab and return to tether."
        if "code" not in query:
            body = b"This address only receives the OAuth sign-in redirect."
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\nConnection: close\r\n\r\n"
            + body
        )
        await writer.drain()
        writer.close()
        if "code" in query and not result.done():
            result.set_result(query)

    server = await asyncio.start_server(handle, "127.0.0.1", port)
    try:
        async with asyncio.timeout(SIGN_IN_TIMEOUT):
            query = await result
    except TimeoutError:
        raise McpError(
            f"No OAuth redirect arrived within {SIGN_IN_TIMEOUT:g} s. Run `tether mcp login` again."
        ) from None
    finally:
        server.close()
        await server.wait_closed()
    return AuthorizationCodeResult(
        code=query["code"][0],
        state=query.get("state", [None])[0],
        iss=query.get("iss", [None])[0],
    )
