"""Work handed to a child Python process (``python -m <module>``) beside the site builder.

The builder's own work is Python that holds the GIL; a child process runs on another core. The
child is started first thing (its imports overlap the builder's reads of the store), is given
its input as bytes on stdin by :meth:`ChildJob.submit` and answers on stdout; :meth:`result`
waits for the answer and raises with the end of the child's stderr when it failed.
"""

from __future__ import annotations

import subprocess
import sys
import threading


class ChildJob:
    """One child process running ``python -m module``; ``start=False``: none (nothing to do)."""

    def __init__(self, module: str, what: str, start: bool = True) -> None:
        self.what = what  # for the error message: "rendering 3 chart SVGs"
        self.thread: threading.Thread | None = None
        self.output: tuple[bytes, bytes] = (b"", b"")
        self.process = subprocess.Popen(
            [sys.executable, "-m", module], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE) if start else None

    def submit(self, payload: bytes, what: str | None = None) -> None:
        """Send ``payload`` (the child's whole stdin) from a thread; the caller goes on."""
        if self.process is None:
            raise RuntimeError(f"the child process for {self.what} was not started")
        self.what = what or self.what
        process = self.process

        def talk() -> None:
            self.output = process.communicate(payload)

        self.thread = threading.Thread(target=talk, daemon=True)
        self.thread.start()

    def result(self) -> bytes | None:
        """The child's stdout, or None where nothing was submitted."""
        if self.process is None or self.thread is None:
            return None
        self.thread.join()
        output, error = self.output
        if self.process.returncode != 0:
            message = error.decode("utf-8", errors="replace").strip().splitlines()[-3:]
            raise RuntimeError(f"{self.what} failed: {' / '.join(message)}")
        return output

    def cancel(self) -> None:
        """Stop the child (also one that is still starting up) and wait for it."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.thread is not None:
            self.thread.join()
        self.process = None
