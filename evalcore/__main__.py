"""`python -m evalcore`: the CLI (evalcore/cli.py)."""
import sys

from evalcore.cli import main

sys.exit(main())
