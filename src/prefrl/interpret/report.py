"""A self-contained HTML report: PNGs embedded as data URIs, plus a table of metrics."""

from __future__ import annotations

import base64
import html
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path


def write_html_report(
    path: str | Path,
    images: Sequence[tuple[str, str | Path]],
    metrics: Mapping[str, float] | None = None,
    title: str = "prefrl: what does the reward reward?",
    notes: Sequence[str] = (),
) -> Path:
    """Write ``path`` (HTML) with ``images`` (``(caption, png path)``) embedded, and ``metrics``.

    Raises:
        FileNotFoundError: an image file is missing.
    """
    path = Path(path)
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;max-width:1200px;margin:auto}"
        "img{max-width:100%;border:1px solid #ddd}td,th{padding:2px 10px;text-align:left}"
        "figure{margin:1.5em 0}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    for note in notes:
        parts.append(f"<p>{html.escape(note)}</p>")
    if metrics:
        parts.append("<h2>Metrics</h2><table><tr><th>metric</th><th>value</th></tr>")
        for k, v in metrics.items():
            val = f"{v:.4g}" if isinstance(v, float) and not math.isnan(v) else html.escape(json.dumps(v))
            parts.append(f"<tr><td>{html.escape(k)}</td><td>{val}</td></tr>")
        parts.append("</table>")
    for caption, img in images:
        img = Path(img)
        if not img.exists():
            raise FileNotFoundError(f"{img}: image for the report is missing")
        data = base64.b64encode(img.read_bytes()).decode("ascii")
        parts.append(
            f"<figure><figcaption><h2>{html.escape(caption)}</h2><small>{html.escape(img.name)}"
            f"</small></figcaption><img src='data:image/png;base64,{data}'></figure>"
        )
    parts.append("</body></html>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
