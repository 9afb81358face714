"""``python -m bot`` is the same as the ``switchboard`` command."""

import sys

from bot.cli import main

sys.exit(main())
