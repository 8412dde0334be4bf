"""Which modules a piece of code imports, checked in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys


def imports_module(code: str, module: str) -> bool:
    """Whether ``module`` is in ``sys.modules`` after ``code`` runs in a new Python process
    (this one's interpreter and path; a failure of ``code`` raises CalledProcessError)."""
    probe = f"{code}\nimport sys\nprint({module!r} in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    return done.stdout.strip() == "True"
