"""`evalcore dimension ACTION`: what people rating a dataset's dimensions read, per language (a task's language
chooses it when the task is made: services.tasks.dimension_specs)."""
from __future__ import annotations

import sys

from evalcore.services import tasks


def describe(con, args) -> None:
    replaced = tasks.describe_dimension(con, dataset=args.dataset, dimension=args.dimension, lang=args.lang,
                                        text=args.text)
    print(f"dimension {args.dimension} of {args.dataset}: its {args.lang} definition "
          f"{'replaced' if replaced else 'set'}; new tasks in {args.lang} show it (tasks made before keep theirs)",
          file=sys.stderr)
