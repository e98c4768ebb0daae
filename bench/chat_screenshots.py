"""The docs' screenshots of an interactive evaluation at 800 px: the scenario, the chat, the dialogue rating, and
the Chat tasks page with its results.

    python bench/chat_screenshots.py [--out docs/img/screens]

A fresh store (`evalcore init`), the project's test endpoint (tests/support/judge_server.py: an OpenAI-compatible server
on 127.0.0.1 that streams back the person's message after 0.3 s; no model ships with evalcore), two endpoints
registered at it, a chat task on demo-zh's KdConv knowledge scenarios; then `python app.py` on that store and, in
headless Chromium, a person who enters, talks for two rounds, ends the conversation and rates it.

The pages are in English (issue 64 made them bilingual): the chat task is made in English (lang="en"; a task on demo-zh
is zh-CN by default and its Chat page is drawn in Chinese whatever the browser says), the browser is set to en-US (the
Chat tasks page follows it), and the rating's controls are found without the language switch beside the title (a
segmented control too). What the person says stays Chinese (the scenario is)."""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
from bench.annotate import ARGS, CHROMIUM, GROUPS, free_port  # noqa: E402
from bench.browser import Server  # noqa: E402
from bench.screenshots import Shots  # noqa: E402

SAID = ("你好！我们聊聊范晓萱吧，你知道她吗？", "她得过哪些奖？")   # the scenario the seeded draw gives ann


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "img" / "screens"))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from evalcore.services import chats
    from evalcore.store import connect
    from evalcore.store import endpoints as registry
    from support.judge_server import JudgeServer

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="evalcore-chat-shots-"))
    db = tmp / "store.duckdb"
    subprocess.run([sys.executable, "-m", "evalcore", "init", "--db", str(db)], cwd=ROOT, check=True,
                   capture_output=True)
    with JudgeServer(delay=0.3, echo=True) as endpoint:
        con = connect(db)
        for name in ("model-a", "model-b"):
            registry.add(con, registry.Registered(name, endpoint.url, "m", api_key_env=None))
        task_id = chats.create_chat(con, lang="en", dataset="demo-zh", track="kdconv/knowledge",
                                    endpoints=["model-a", "model-b"], n_scenarios=4, max_rounds=5,
                                    name="KdConv films: two models")
        code = chats.stored.get(con, task_id).access_code
        con.close()
        server = Server(str(db), free_port(), tmp / "server.log")
        server.start()
        shot = Shots(out, settle_ms=1500)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                page = browser.new_context(viewport={"width": 800, "height": 1000}, locale="en-US").new_page()
                page.goto(f"{server.base}/chat?task={task_id}")
                page.get_by_label("Your name").fill("ann")
                page.get_by_label("Access code").fill(code)
                page.get_by_role("button", name="Start chatting").click()
                page.get_by_role("button", name="I have kept my key: start").click(timeout=60_000)
                box = page.locator('[data-testid="stChatInputTextArea"]')
                box.wait_for(timeout=60_000)
                shot(page, "chat-1-scenario-800px")
                for text in SAID:
                    box.fill(text)
                    box.press("Enter")
                    page.get_by_text(f"echo: {text}", exact=True).wait_for(timeout=60_000)
                shot(page, "chat-2-talk-800px")
                page.get_by_role("button", name="End the conversation and rate it").click()
                page.get_by_text("Rate the whole conversation").wait_for(timeout=60_000)
                groups = page.locator(GROUPS)   # each reply's flags, then Info, Coh, Know (the language switch left out)
                groups.nth(0).get_by_text("repetition").click()
                page.wait_for_timeout(800)
                for i, value in enumerate((2, 1, 2)):
                    groups.nth(len(SAID) + i).locator("button").nth(value).click()
                    page.wait_for_timeout(800)
                page.get_by_text("Rate the whole conversation").scroll_into_view_if_needed()
                shot(page, "chat-3-rate-800px")
                page.goto(f"{server.base}/chats?task={task_id}")
                shot(page, "chat-4-tasks-800px")
                browser.close()
        finally:
            server.stop()
    for path in shot.wrote:
        print(path)


if __name__ == "__main__":
    main()
