"""``python -m forensics`` runs the ghost-forensics CLI."""

import sys

from .cli import main

sys.exit(main())
