"""Labels per second the labelling server sustains with 20 concurrent simulated labellers.

Starts ``prefrl label`` (uvicorn; by default over a SQLite store in WAL mode, every label
committed with ``synchronous=FULL`` before it is acknowledged) on loopback in its own
process, enqueues queries, and lets 20 labellers loop "GET /api/queries/next → POST
/api/labels" for a fixed time. Then it checks the database: every acknowledged label is
there (none lost) and no query was labelled twice (none duplicated). Prints JSON as its
last line.

    python benchmarks/label_server.py [--labellers 20] [--seconds 15] [--queries 20000]
    python benchmarks/label_server.py --store postgresql+psycopg://user:pw@127.0.0.1/db

With ``--store URL`` the benchmark adds its own run and labellers (unique names) to that
database and counts only their labels, so it may be run on a store that is in use.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
import sqlalchemy as sa

from prefrl.data.fragments import Fragments
from prefrl.storage import schema as S
from prefrl.storage.store import QueryStore


def fragments(n: int, length: int = 10) -> Fragments:
    rows = n * (length + 1)
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 255, (rows, 32, 32, 3), dtype=np.uint8)
    obs = rng.normal(size=(rows, 3)).astype(np.float32)
    return Fragments(
        obs, np.zeros((rows, 1), np.float32), obs[:, 0], np.zeros(rows, bool),
        np.arange(n) * (length + 1), length, np.arange(n), np.zeros(n, np.int64), frames,
    )  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def labeller(url: str, token: str, until: float, counts: dict[str, int]) -> None:
    h = {"Authorization": f"Bearer {token}"}
    answers = ("left", "right", "equal")
    async with httpx.AsyncClient(base_url=url, headers=h, timeout=30) as c:
        k = 0
        while time.monotonic() < until:
            q = (await c.get("/api/queries/next")).json()
            if q["query_id"] is None:
                break
            r = await c.post("/api/labels", json={"query_id": q["query_id"], "answer": answers[k % 3]})
            k += 1
            counts["ok" if r.status_code == 201 else f"http_{r.status_code}"] += 1


async def drive(url: str, tokens: list[str], seconds: float) -> tuple[dict[str, int], float]:
    counts: dict[str, int] = {"ok": 0}
    from collections import defaultdict

    counts = defaultdict(int, counts)
    t0 = time.monotonic()
    await asyncio.gather(*(labeller(url, t, t0 + seconds, counts) for t in tokens))
    return dict(counts), time.monotonic() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--labellers", type=int, default=20)
    p.add_argument("--seconds", type=float, default=15.0)
    p.add_argument("--queries", type=int, default=20_000)
    p.add_argument("--store", default=None, help="SQLAlchemy URL (default: a new SQLite file)")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="prefrl-bench-"))
    db = args.store or str(tmp / "labels.db")
    store = QueryStore(db, tmp / "clips")
    tag = secrets.token_hex(4)
    run_name = f"bench-{tag}"
    run = store.ensure_run(run_name, "Which is better?")
    clips = store.add_clips(run, fragments(16), range(16))
    rng = np.random.default_rng(0)
    a = rng.integers(0, 16, args.queries)
    b = (a + rng.integers(1, 16, args.queries)) % 16
    store.add_queries(run, [clips[i] for i in a], [clips[i] for i in b])
    tokens = [store.add_user(f"labeller{i}-{tag}") for i in range(args.labellers)]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "prefrl.cli.main", "label", "--store", db, "--clip-dir", str(tmp / "clips")]
    cmd += ["--port", str(port), "--run", run_name]
    server = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
    if os.environ.get("PREFRL_BENCH_PID_FILE"):  # for attaching a profiler (py-spy) to the server
        Path(os.environ["PREFRL_BENCH_PID_FILE"]).write_text(str(server.pid))
    try:
        for _ in range(300):
            try:
                if httpx.get(url + "/api/me", timeout=1).status_code == 401:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        counts, wall = asyncio.run(drive(url, tokens, args.seconds))
    finally:
        server.terminate()
        server.wait(10)
    ours = S.queries.c.run_id == run
    with store.read() as c:
        stored = c.execute(
            sa.select(sa.func.count()).select_from(S.labels.join(S.queries)).where(ours)
        ).scalar()
        twice = c.execute(
            sa.select(sa.func.count()).select_from(S.queries).where(ours, S.queries.c.n_labels > 1)
        ).scalar()
    result = {
        "benchmark": "label_server",
        "labellers": args.labellers,
        "seconds": round(wall, 2),
        "labels_acknowledged": counts.get("ok", 0),
        "labels_in_db": int(stored),
        "lost": counts.get("ok", 0) - int(stored),
        "duplicated_queries": int(twice),
        "errors": {k: v for k, v in counts.items() if k != "ok"},
        "labels_per_s": round(counts.get("ok", 0) / wall, 1),
        "store": "sqlite (WAL, synchronous=FULL)" if store.is_sqlite else store.engine.dialect.name,
        "machine": f"{platform.processor() or platform.machine()}, {__import__('os').cpu_count()} cores",
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
