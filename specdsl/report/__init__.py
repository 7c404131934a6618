"""report: one self-contained HTML page of what state recorded about an
experiment, a matrix sweep or a track (`specdsl report NAME -o out.html`).

The page opens offline: its style is inline, its plots are PNG images
embedded as base64 (matplotlib, Agg backend), and it needs no script. It
reads the state and the run folders it points at (`result.json` of each
benchmark run) and never changes either; it starts no process and touches
no host.

`gather` turns state into plain records (`ExperimentView`, `SweepView`,
`TrackView`); `plots` draws them; `page` writes the HTML. The diagnosis
section is drawn only when `specdsl.diagnose` is installed (imported on
first use). This layer sits above apply (it reads results and assertions as
the checks read them) and below cli; it prints nothing.
"""

from specdsl.report.lookup import NotFound, gather
from specdsl.report.page import render

__all__ = ["NotFound", "gather", "render"]
