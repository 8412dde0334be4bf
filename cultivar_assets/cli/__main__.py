"""``python -m cultivar_assets.cli``: the ``cultivar`` command."""

import sys

from cultivar_assets.cli import main

sys.exit(main())
