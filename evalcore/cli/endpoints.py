"""`evalcore endpoint ACTION` and `evalcore generate`: chat endpoints registered, listed, shown, removed and tested;
a dataset's items sent to one and the replies stored (resumable), then scored as after an upload. No key is ever
printed: only the name of its variable and whether it is set."""
from __future__ import annotations

import sys
import time
from dataclasses import replace

from evalcore.cli.output import emit, escaped, on_wait, visible
from evalcore.core.chat import Refused, Retryable, chat_iter, served_models
from evalcore.core.keys import key_hint, where_from
from evalcore.core.words import count
from evalcore.generation import run as generation
from evalcore.generation.templates import resolve, shipped
from evalcore.services import jobs
from evalcore.services.upload import queue_scoring
from evalcore.store import Handle, lock_wait, resolve_db_path, transaction
from evalcore.store import endpoints as registry


def add(con, args) -> None:
    entry = registry.Registered(args.name, args.base_url, args.model, args.api_key_env or None, args.temperature,
                                args.top_p, args.max_tokens, args.seed, args.timeout, args.concurrency, args.template)
    if args.template:
        resolve(args.template, None, None)   # a template that cannot be read is refused now, not at the first run
    registry.add(con, entry, replace=args.replace)
    print(f"endpoint {entry.name}: {entry.model} at {entry.base_url}; "
          f"{where_from(entry.api_key_env) if entry.api_key_env else 'no key is sent'}")
    print(f"next: `evalcore endpoint test {entry.name}`, then `evalcore generate --dataset D --endpoint {entry.name} "
          "--model MODEL_NAME`", file=sys.stderr)


def listing(con, args) -> None:
    emit(visible(registry.listing(con)), args.format)


def show(con, args) -> None:
    entry = registry.get(con, args.name)
    for field, value in vars(entry).items():
        print(f"{field:12} {'' if value is None else escaped(value)}")
    if entry.api_key_env:
        print(f"{'key':12} {where_from(entry.api_key_env)}")
    if registry.stored_with_secrets(con, entry.name):
        print(f"note: the stored base URL holds a user name/password or a query (registered before they were "
              f"refused); they are neither shown nor sent: register it again without them (`evalcore endpoint add "
              f"{entry.name} --base-url URL --model {entry.model} --api-key-env VAR --replace`)", file=sys.stderr)


def remove(con, args) -> None:
    registry.remove(con, args.name)
    print(f"endpoint {args.name} removed (the responses it generated stay)")


def test(con, args) -> int:
    """One short request, streamed, and GET /models: what works and what does not, each in a sentence."""
    entry = registry.get(con, args.name)
    con.close()   # the store is not needed while the server is asked (running closes it again: harmless)
    ok = True
    try:
        served = served_models(entry.endpoint())
        listed = f"serves {', '.join(served) or '(an empty list)'}"
        if served and entry.model not in served:
            listed += f"; NOT {entry.model!r}: register it with one of those names (--replace)"
            ok = False
    except (Retryable, Refused) as exc:
        hint = key_hint(str(exc), entry.api_key_env)
        listed, ok = f"GET /models failed: {exc}{hint}", ok and not hint
    print(f"{entry.name}: {entry.base_url} {listed}")
    for stream in (False, True):
        start = time.monotonic()
        probe = replace(entry.endpoint(stream=stream), max_tokens=min(16, entry.max_tokens))
        [(_, reply)] = list(chat_iter(probe, [(0, [{"role": "user", "content": "Say hello."}])], concurrency=1,
                                      retries=1))
        took = time.monotonic() - start
        how = "streaming" if stream else "one JSON answer"
        if reply.text is not None:
            print(f"{how}: answered in {took:.2f} s ({len(reply.text)} characters, finish {reply.finish})")
        else:
            ok = False
            print(f"{how}: failed after {took:.2f} s: {reply.error}{key_hint(reply.error, entry.api_key_env)}")
    return 0 if ok else 1


def templates(args) -> None:
    if args.template:
        tpl = resolve(args.template, None, None)
        print(f"# {tpl.name} ({tpl.skill}, {tpl.language}) sha256 {tpl.sha256} from {tpl.source}")
        print(escaped(tpl.text))
        return
    for tpl in shipped():
        print(f"{tpl.name:22} {tpl.short_hash}  {tpl.description}")


def generate(con, args) -> int:
    """Send, store, then score what was stored (a scoring job, run here as the dashboard's worker would).
    Exit 0 when every item has its reply, 1 when some have none (re-run to send only those), 130 on Ctrl-C."""
    tracks = [t.strip() for t in (args.tracks or "").split(",") if t.strip()] or None
    handle = Handle(resolve_db_path(args.db), con, lock_wait(), on_wait)
    try:
        try:
            outcome = generation.generate(handle, dataset=args.dataset, tracks=tracks, endpoint=args.endpoint,
                                          model=args.model, items=args.items, seed=args.seed if args.items else None,
                                          template=args.template, progress=not args.no_progress)
        except KeyboardInterrupt:
            print("\nstopped by Ctrl-C: the replies received are stored; run the same command again to send the "
                  "rest", file=sys.stderr)
            return 130
        for line in outcome.lines():
            print(line)
        if outcome.stored_now and not args.no_score:
            with transaction(handle.con):
                job, steps = queue_scoring(handle.con, args.dataset, outcome.tracks,
                                           model=outcome.model)
            print(f"scoring {outcome.model} (job {job}, {count(steps, 'step')}) ...", file=sys.stderr)
            jobs.run(handle.con, job, handle=handle)
            state, detail = handle.con.execute("SELECT state, detail FROM jobs WHERE job_id = ?", [job]).fetchall()[0]
            print(f"scoring job {job}: {state}: {detail}")
        return 0 if outcome.missing == 0 else 1
    finally:
        if handle.con is not con:
            handle.con.close()


