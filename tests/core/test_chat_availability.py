"""chat.availability says what is wrong with an endpoint's base URL by registration's check (core.urls.problem), and
never repeats the URL: one typed on the command line (--judge-base-url) may hold a pasted key (issue 61, B8)."""
from __future__ import annotations

import pytest

from evalcore.core.chat import Endpoint, availability
from evalcore.core.urls import problem
from evalcore.metrics.judge.client import availability as judge_availability

KEY = "sk-canary-3f9a1c77e2"
BAD = [
    f"http://user:{KEY}@127.0.0.1:8000/v1",          # a key as the password
    f"http://{KEY}@127.0.0.1:8000/v1",               # as the user name
    f"http://127.0.0.1:8000/v1?api_key={KEY}",       # in a query
    f"http://127.0.0.1:8000/v1#{KEY}",               # in a fragment
    f" http://127.0.0.1:8000/v1/{KEY}",              # a leading space
    f"http://127.0.0.1:99999/{KEY}",                 # a port over 65535
    f"ftp://127.0.0.1/{KEY}",                        # not http(s)
    f"127.0.0.1:8000/{KEY}",                         # no scheme
    f"http://127.0.0.1/v1/{KEY}\x1b[2J",             # a control character
]


@pytest.mark.parametrize("url", BAD)
def test_a_base_url_is_refused_without_being_repeated(url):
    why = availability(Endpoint(url, "m"), "no endpoint")
    assert why and KEY not in why and url not in why
    assert why == problem(url).removeprefix("the ")   # registration's sentence, one check for both
    judged = judge_availability(Endpoint(url, "m"))
    assert judged.startswith("judge base URL") and KEY not in judged


def test_a_usable_endpoint_and_a_missing_one():
    assert availability(Endpoint("http://127.0.0.1:8000/v1", "m"), "no endpoint") is None
    assert availability(None, "no endpoint") == "no endpoint"
    assert availability(Endpoint("https://api.example.org/v1/", " "), "-").startswith("no model name")
