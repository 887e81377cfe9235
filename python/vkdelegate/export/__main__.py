"""`python3 -m vkdelegate.export ...` (cli.py)."""
import sys

from .cli import main

sys.exit(main())
