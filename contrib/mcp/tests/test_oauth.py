"""OAuth-protected HTTP servers: stored tokens are used, and kept owner-only."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

from mcp.shared.auth import OAuthToken

from tether_mcp.connection import ServerConnection
from tether_mcp.oauth import FileTokenStorage
from tether_mcp.settings import ServerSettings


async def test_stored_tokens_sign_the_requests_and_stay_owner_only(
    tmp_path: Path, secured_server: Any
) -> None:
    oauth_dir = tmp_path / "data" / "mcp" / "oauth"
    await FileTokenStorage(oauth_dir / "secured.json").set_tokens(
        OAuthToken(access_token="good-token", refresh_token="r")
    )
    assert stat.S_IMODE((oauth_dir / "secured.json").stat().st_mode) == 0o600
    assert stat.S_IMODE(oauth_dir.stat().st_mode) == 0o700
    settings = ServerSettings(url=secured_server.url, oauth=True)
    connection = ServerConnection("secured", settings, oauth_dir=oauth_dir)
    try:
        result = await connection.call("echo", {"text": "signed"})
    finally:
        await connection.aclose()
    assert not result.is_error
    assert result.content[0].text == "signed"
    assert [p.name for p in oauth_dir.iterdir()] == ["secured.json"]  # no temp files left


async def test_without_a_valid_token_the_server_refuses(
    tmp_path: Path, secured_server: Any
) -> None:
    settings = ServerSettings(url=secured_server.url, headers={"Authorization": "Bearer wrong"})
    connection = ServerConnection("secured", settings)
    try:
        failed = None
        try:
            await connection.ensure_started()
        except Exception as exc:  # the server answers 401
            failed = exc
    finally:
        await connection.aclose()
    assert failed is not None and "could not be started" in str(failed)
