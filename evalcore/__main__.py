"""`python -m evalcore`: the CLI (evalcore/cli/)."""
import sys

from evalcore.cli import main

sys.exit(main())
