"""The dashboard's pages, listed once. app.py builds its navigation from PAGES; the tests and the
benchmarks read the same list. Plain data, no Streamlit: anything may import it."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Page:
    title: str
    icon: str
    url_path: str  # fixed, so shared links stay valid; "" is the overview at "/"
    script: str    # relative to the app's root

    @property
    def name(self) -> str:
        """The script's stem: overview, trust, leaderboard, ..."""
        return Path(self.script).stem


PAGES: tuple[Page, ...] = (
    Page("Overview", ":material/home:", "", "pages/views/overview.py"),
    Page("Metric trust", ":material/verified:", "trust", "pages/views/trust.py"),
    Page("Leaderboard", ":material/leaderboard:", "leaderboard", "pages/views/leaderboard.py"),
    Page("Correlations", ":material/grid_on:", "correlations", "pages/views/correlations.py"),
    Page("Drill-down", ":material/search:", "drilldown", "pages/views/drilldown.py"),
    Page("Human evaluation", ":material/groups:", "human", "pages/views/human.py"),
    Page("Judge audit", ":material/gavel:", "judges", "pages/views/judges.py"),
    Page("Ensembles", ":material/join:", "ensemble", "pages/views/ensemble.py"),
    Page("Compare", ":material/compare_arrows:", "compare", "pages/views/compare.py"),
    Page("Upload", ":material/upload:", "upload", "pages/views/upload.py"),
    Page("Rating tasks", ":material/assignment:", "tasks", "pages/views/tasks.py"),
    Page("Annotate", ":material/rate_review:", "annotate", "pages/views/annotate.py"),
    Page("Chat tasks", ":material/forum:", "chats", "pages/views/chats.py"),
    Page("Chat", ":material/chat:", "chat", "pages/views/chat.py"),
)
