"""A hostile HTTP server on 127.0.0.1 that echoes each request back inside its error response.

Some proxies and servers put the request's headers (``Authorization`` included) and body into
their error messages. Every request gets ``status`` with a JSON body that quotes them, so any
code path that prints a server's error text would print the secret the client sent. ``echo``
(a function of the ``Authorization`` header's value) chooses the form it is quoted in: as sent
by default; base64-encoded, split in two, ... (tests/test_secrets.py).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class EchoServer:
    def __init__(self, status: int = 500, echo=None) -> None:
        self.status = status
        self.echo = echo or (lambda sent: sent)
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
                headers = dict(self.headers.items())
                sent = self.headers.get("Authorization") or "none"  # case-insensitive lookup
                server.requests.append({"method": self.command, "path": self.path,
                                        "headers": headers, "authorization": sent})
                sent = server.echo(sent)
                payload = json.dumps({
                    "error": f"bad credentials, you sent {sent}",
                    "message": f"bad credentials, you sent {sent}; headers: {headers}",
                    "request_body": body[:2000],
                }).encode()
                self.send_response(server.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("X-Echo-Authorization", sent)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = _answer

            def log_message(self, *args) -> None:  # quiet
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> EchoServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
