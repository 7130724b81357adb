"""Headless Debian Chromium driven by Playwright (never a downloaded browser)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--autoplay-policy=no-user-gesture-required",
]  # fmt: skip


def chromium_path() -> str | None:
    """Debian's chromium (``apt-get install chromium``), or ``$PREFRL_CHROMIUM``."""
    env = os.environ.get("PREFRL_CHROMIUM")
    if env and Path(env).is_file():
        return env
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else None


def launch(playwright: Any, user_data_dir: Path, **kwargs: Any) -> Any:
    """A fresh persistent context (own user-data-dir) of headless system Chromium."""
    exe = chromium_path()
    if exe is None:
        raise RuntimeError("chromium is not installed: apt-get install -y chromium")
    return playwright.chromium.launch_persistent_context(
        str(user_data_dir), executable_path=exe, headless=True, args=CHROMIUM_ARGS, **kwargs
    )
