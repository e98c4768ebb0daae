"""The dashboard's pages, listed once. app.py builds its navigation from PAGES; the tests and the
benchmarks read the same list. Plain data, no Streamlit: anything may import it."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalcore.core.i18n import N_


@dataclass(frozen=True)
class Page:
    title: str     # in English, marked for the catalog: app.py shows it translated
    icon: str
    url_path: str  # fixed, so shared links stay valid; "" is the overview at "/"
    script: str    # relative to the app's root

    @property
    def name(self) -> str:
        """The script's stem: overview, trust, leaderboard, ..."""
        return Path(self.script).stem


PAGES: tuple[Page, ...] = (
    Page(N_("Overview"), ":material/home:", "", "pages/views/overview.py"),
    Page(N_("Metric trust"), ":material/verified:", "trust", "pages/views/trust.py"),
    Page(N_("Leaderboard"), ":material/leaderboard:", "leaderboard", "pages/views/leaderboard.py"),
    Page(N_("Correlations"), ":material/grid_on:", "correlations", "pages/views/correlations.py"),
    Page(N_("Drill-down"), ":material/search:", "drilldown", "pages/views/drilldown.py"),
    Page(N_("Human evaluation"), ":material/groups:", "human", "pages/views/human.py"),
    Page(N_("Judge audit"), ":material/gavel:", "judges", "pages/views/judges.py"),
    Page(N_("Ensembles"), ":material/join:", "ensemble", "pages/views/ensemble.py"),
    Page(N_("Compare"), ":material/compare_arrows:", "compare", "pages/views/compare.py"),
    Page(N_("Upload"), ":material/upload:", "upload", "pages/views/upload.py"),
    Page(N_("Rating tasks"), ":material/assignment:", "tasks", "pages/views/tasks.py"),
    Page(N_("Annotate"), ":material/rate_review:", "annotate", "pages/views/annotate.py"),
    Page(N_("Chat tasks"), ":material/forum:", "chats", "pages/views/chats.py"),
    Page(N_("Chat"), ":material/chat:", "chat", "pages/views/chat.py"),
)
