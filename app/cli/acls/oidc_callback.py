"""The local end of `corral login`'s OIDC browser flow (Nomad's lib/auth/oidc CallbackServer):
an HTTP server on -oidc-callback-addr whose /oidc/callback the provider sends the browser back
to with the login's code and state, and the browser opening that starts it. The client nonce
is made here and never leaves this process except to the servers and, inside the provider's
ID token, back."""

from __future__ import annotations

import contextlib
import html
import os
import queue
import secrets
import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import click

CALLBACK_PATH = "/oidc/callback"
# The servers forget a login six minutes after auth-url (app/acl/oidc.py): waiting longer is useless.
WAIT_S = 6 * 60.0


@dataclass(frozen=True)
class Callback:
    """What the provider sent back: code and state, or the error it refused the login with."""

    code: str = ""
    state: str = ""
    iss: str = ""
    error: str = ""


def _listen_address(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise click.ClickException(f"-oidc-callback-addr {addr!r}: want <IP>:<PORT>, e.g. localhost:4649")
    return host.strip("[]"), int(port)


def _callback_of(query: dict[str, list[str]]) -> Callback:
    def one(name: str) -> str:
        return (query.get(name) or [""])[0]

    if one("error"):
        return Callback(error=": ".join(p for p in (one("error"), one("error_description")) if p))
    return Callback(code=one("code"), state=one("state"), iss=one("iss"))


class CallbackServer:
    """Serves /oidc/callback on `addr` in a thread until closed; the first callback is kept."""

    def __init__(self, addr: str) -> None:
        self.nonce = secrets.token_urlsafe(24)
        self.redirect_uri = f"http://{addr}{CALLBACK_PATH}"
        self._received: queue.Queue[Callback] = queue.Queue(maxsize=1)
        received = self._received

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                if url.path != CALLBACK_PATH:
                    self.send_error(404)
                    return
                found = _callback_of(parse_qs(url.query))
                with contextlib.suppress(queue.Full):  # a reload of the page: the first callback is the login's
                    received.put_nowait(found)
                self._page(found)

            def _page(self, found: Callback) -> None:
                text = (
                    f"Login failed: {html.escape(found.error)}"
                    if found.error
                    else "Signed in via your OIDC provider. You can close this window and return to the terminal."
                )
                page = f"<!DOCTYPE html><html><head><title>corral login</title></head><body><p>{text}</p></body></html>"
                body = page.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return  # the terminal shows the login, not an access log

        try:
            self._server = ThreadingHTTPServer(_listen_address(addr), Handler)
        except OSError as err:
            raise click.ClickException(f"Error performing login: cannot listen on {addr}: {err}") from None
        self._thread = threading.Thread(target=self._server.serve_forever, name="oidc-callback", daemon=True)
        self._thread.start()

    def wait(self, timeout_s: float = WAIT_S) -> Callback:
        try:
            return self._received.get(timeout=timeout_s)
        except queue.Empty:
            raise click.ClickException(
                f"Error performing login: the provider did not call {self.redirect_uri} back within {timeout_s:.0f}s"
            ) from None

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def open_browser(url: str) -> bool:
    """Open `url` in the desktop's browser; False where there is none. On Linux without a
    graphical session nothing is tried: a console browser would take over the terminal."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return False
    import webbrowser  # only when a browser may be opened

    try:
        return webbrowser.open(url)
    except webbrowser.Error:
        return False
