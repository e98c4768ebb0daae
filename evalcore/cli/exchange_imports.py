"""Handlers of the `import` commands for files other tools write (evalcore.cli.declarations_imports)."""
from __future__ import annotations

from evalcore.cli.imports import reported, scales
from evalcore.ingest.argilla import import_argilla
from evalcore.ingest.dstc11 import import_dstc11
from evalcore.ingest.hfdata import import_hf
from evalcore.ingest.inspectlog import import_inspect
from evalcore.ingest.labelstudio import import_labelstudio
from evalcore.ingest.lmeval import import_lmeval


@reported
def lmeval(con, args):
    return import_lmeval(con, args.file, dataset=args.dataset, track=args.track, model=args.model,
                         doc_id=args.doc_id, doc_context=args.doc_context, metrics=args.metrics,
                         filter_name=args.filter, language=args.language)


@reported
def inspect(con, args):
    return import_inspect(con, args.file, dataset=args.dataset, track=args.track, model=args.model,
                          context=args.context, language=args.language)


@reported
def hf(con, args):
    return import_hf(con, args.file, dataset=args.dataset, track=args.track, columns=args.columns, model=args.model,
                     split=args.split, scales=scales(args.scale), missing=args.missing)


@reported
def labelstudio(con, args):
    return import_labelstudio(con, args.file, dataset=args.dataset, track=args.track, item_field=args.item_field,
                              model_field=args.model_field, dimension_from=args.dimension_from,
                              scales=scales(args.scale), missing=args.missing)


@reported
def argilla(con, args):
    questions = [q.strip() for q in args.questions.split(",") if q.strip()] if args.questions is not None else None
    return import_argilla(con, args.folder, dataset=args.dataset, track=args.track, item_field=args.item_field,
                          model_field=args.model_field, response_field=args.response_field,
                          questions=questions, scales=scales(args.scale),
                          missing=args.missing, annotators=args.annotators)


@reported
def dstc11(con, args):
    return import_dstc11(con, args.file, dataset=args.dataset, track=args.track, text=args.text, model=args.model,
                         scales=scales(args.scale), missing=args.missing)
