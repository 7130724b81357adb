"""Every command that writes a run writes no pickle, and every policy it writes is prefrl's own.

The writers, each at a tiny budget: ``prefrl train`` (on-policy, with checkpoints and the fresh agent
of ``--final-agent-steps``; off-policy, whose checkpoints hold a replay buffer), ``prefrl train
--reward-from`` (and its HTML page, ``prefrl report``), offline ``prefrl train --trajectory-path`` (and the
``prefrl rollouts`` file it reads), a sweep's reference cell
(:func:`~prefrl.agents.evaluate.train_on_true_reward`, also the benchmarks' writer) and ``prefrl
evaluate --videos``. Then:

- every ``*policy.zip`` reads back with prefrl's reader and loads as an agent;
- no file, zip member (``.npz`` arrays, policy entries), nor SQLite blob holds a pickle: see
  :func:`pickles` for what counts.
"""

from __future__ import annotations

import io
import json
import re
import sqlite3
import zipfile
from pathlib import Path

import numpy as np
import pytest

from prefrl.agents.evaluate import train_on_true_reward
from prefrl.agents.policy_io import load_agent, read_policy
from prefrl.agents.sb3 import AgentConfig, make_vec_env
from prefrl.cli.main import main
from tests.narrow import section

PICKLE_START = re.compile(rb"\x80[\x02-\x05]")
"""PROTO 2..5: the first opcode of every pickle since Python 2.3 (torch.save: 2; pickle: 4 or 5)."""
PICKLE_NAME = re.compile(r"(\.(pkl|pickle|pth|pt|joblib)|(^|/)data)$")
"""Pickles by name: SB3's zip entries (``data`` with ``:serialized:`` values, ``policy.pth``,
``pytorch_variables.pth``), torch.save's ``data.pkl``, joblib files."""
TINY_PPO = ["--agent.algo", "ppo", "--agent.n-steps", "64", "--agent.batch-size", "32",
            "--agent.net-arch", "8", "--eval-episodes", "1", "--no-progress"]  # fmt: skip


def _safetensors(data: bytes) -> bool:
    """A safetensors file: 8-byte header length, then a JSON object (tensors only, nothing pickled)."""
    n = int.from_bytes(data[:8], "little")
    if len(data) < 9 or 8 + n > len(data) or data[8:9] != b"{":
        return False
    try:
        return isinstance(json.loads(data[8 : 8 + n]), dict)
    except ValueError:
        return False


def _tfrecords(data: bytes) -> bool:
    """TensorBoard's event file: records of (8-byte length, crc, data, crc) that end with the file."""
    pos = 0
    while pos + 8 <= len(data):
        pos += 16 + int.from_bytes(data[pos : pos + 8], "little")
    return pos == len(data) and len(data) > 0


def _sqlite_blobs(data: bytes, tmp: Path) -> list[tuple[str, bytes]]:
    db = tmp / "scan.sqlite"
    db.write_bytes(data)
    con = sqlite3.connect(db)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        blobs = []
        for table in tables:
            cur = con.execute(f'SELECT * FROM "{table}"')
            cols = [c[0] for c in cur.description]
            blobs += [(f"{table}.{c}", v) for row in cur for c, v in zip(cols, row) if isinstance(v, bytes)]
        return blobs
    finally:
        con.close()
        db.unlink()


def pickles(name: str, data: bytes, tmp: Path) -> list[str]:
    """Where file (or zip member, or blob) ``name`` with contents ``data`` holds a pickle.

    A pickle is: a stream starting with a PROTO opcode (``\\x80\\x02``..``\\x80\\x05``) at the start
    of a file, zip member or SQLite blob (not inside safetensors or TensorBoard files, whose binary
    headers may begin with those bytes); an entry named like one (:data:`PICKLE_NAME`); SB3's
    base64 ``:serialized:`` values; a ``.npy`` array of Python objects (stored pickled).
    """
    found = []
    if PICKLE_NAME.search(name):
        found.append(f"{name}: named like a pickle")
    if PICKLE_START.match(data) and not _safetensors(data) and not _tfrecords(data):
        found.append(f"{name}: starts with a pickle protocol opcode")
    if b":serialized:" in data:
        found.append(f"{name}: holds stable-baselines3's serialized (pickled) values")
    if data.startswith(b"\x93NUMPY"):
        try:
            np.lib.format.read_array(io.BytesIO(data), allow_pickle=False)
        except ValueError as e:  # "Object arrays cannot be loaded when allow_pickle=False"
            if "allow_pickle" not in str(e):
                raise
            found.append(f"{name}: an array of Python objects (pickled)")
    if data.startswith(b"PK\x03\x04") or data.startswith(b"PK\x05\x06"):
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            for member in z.namelist():
                found += pickles(f"{name}/{member}", z.read(member), tmp)
    if data.startswith(b"SQLite format 3\x00"):
        for where, blob in _sqlite_blobs(data, tmp):
            found += [f"{name}:{m}" for m in pickles(where, blob, tmp) if "named like" not in m]
    return found


def scan(root: Path, tmp: Path) -> list[str]:
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    return [m for p in files for m in pickles(str(p), p.read_bytes(), tmp)]


# ------------------------------------------------------------------ the check catches pickles
def test_the_scan_finds_sb3_torch_numpy_and_sql_pickles(tmp_path: Path) -> None:
    import pickle

    import torch

    from prefrl.agents.sb3 import make_agent

    agent = make_agent(
        AgentConfig(algo="ppo", n_steps=64, batch_size=64, net_arch=[8]), make_vec_env("CartPole-v1")
    )
    agent.save(tmp_path / "sb3.zip")  # stable-baselines3's own format: what prefrl must never write
    found = scan(tmp_path / "sb3.zip", tmp_path)
    assert any("sb3.zip/data: holds stable-baselines3's serialized" in m for m in found), found
    assert any("sb3.zip/policy.pth" in m for m in found) and any("pytorch_variables.pth" in m for m in found)
    torch.save({"w": torch.zeros(2)}, tmp_path / "state.bin")  # a zip holding data.pkl
    assert any("state.bin/state/data.pkl" in m for m in scan(tmp_path / "state.bin", tmp_path))
    (tmp_path / "raw.bin").write_bytes(pickle.dumps({"a": 1}))
    assert scan(tmp_path / "raw.bin", tmp_path) == [
        f"{tmp_path / 'raw.bin'}: starts with a pickle protocol opcode"
    ]
    np.savez(tmp_path / "objects.npz", a=np.array([{"a": 1}], dtype=object))
    assert any("an array of Python objects" in m for m in scan(tmp_path / "objects.npz", tmp_path))
    con = sqlite3.connect(tmp_path / "store.sqlite")
    con.execute("CREATE TABLE t (payload BLOB)")
    con.execute("INSERT INTO t VALUES (?)", (pickle.dumps([1, 2], protocol=2),))
    con.commit()
    con.close()
    assert any(":t.payload: starts with a pickle" in m for m in scan(tmp_path / "store.sqlite", tmp_path))
    # and safetensors whose 8-byte header length happens to begin with \x80\x02 is not one
    from safetensors.torch import save

    for pad in range(800):
        data = save({"w": torch.zeros(1)}, metadata={"pad": "x" * pad})
        if PICKLE_START.match(data):
            assert pickles("w.safetensors", data, tmp_path) == []
            break
    else:
        pytest.fail("no safetensors header of length 0x0280.. in the range tried")


# ------------------------------------------------------------------ every writer of a run
@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The run directories (and files) each writer made, by writer."""
    root = tmp_path_factory.mktemp("writers")
    out = {name: root / name for name in ("train", "reward_from", "offline", "reference")}
    args = ["train", "--env.id", "CartPole-v1", "--run-dir", str(out["train"]), "--loop.total-steps", "256",
            "--loop.initial-steps", "64", "--loop.iterations", "2", "--loop.total-labels", "6",
            "--final-agent-steps", "64", "--no-page", *TINY_PPO]  # fmt: skip
    assert main(args) == 0
    assert main(["train", "--reward-from", str(out["train"]), "--run-dir", str(out["reward_from"]),
                 "--loop.total-steps", "64", "--no-page", *TINY_PPO]) == 0  # fmt: skip
    page = ["report", str(out["reward_from"]), "--pairs", "0", "--episodes", "1", "--clips", "20"]
    assert main(page) == 0  # the page prefrl train writes at the end (--no-page here: fewer frames)
    assert main(["evaluate", str(out["train"]), "--episodes", "1", "--videos", "1"]) == 0
    out["trajectories"] = root / "t.npz"
    assert main(["rollouts", "--out", str(out["trajectories"]), "--episodes", "2"]) == 0
    assert main(["train", "--trajectory-path", str(out["trajectories"]), "--run-dir", str(out["offline"]),
                 "--loop.total-labels", "10", "--loop.iterations", "1", "--no-progress",
                 "--no-page"]) == 0  # fmt: skip
    ppo = AgentConfig(algo="ppo", n_steps=64, batch_size=32, net_arch=[8])
    train_on_true_reward(ppo, "CartPole-v1", 64, 0, out["reference"], 1)  # a sweep's reference cell
    return out


def policies(root: Path) -> list[Path]:
    return sorted(root.rglob("*policy.zip")) if root.is_dir() else []


def test_every_run_writer_writes_prefrl_policies(runs: dict[str, Path]) -> None:
    found = {name: [p.relative_to(root).as_posix() for p in policies(root)] for name, root in runs.items()}
    assert {"policy.zip", "fresh_policy.zip"} <= set(found["train"])
    assert any(p.startswith("checkpoints/") for p in found["train"])
    assert found["reward_from"] == ["policy.zip"] and found["reference"] == ["policy.zip"]
    assert found["offline"] == []  # a reward only
    for root in runs.values():
        for path in policies(root):
            meta, _ = read_policy(path)  # prefrl's reader: an SB3 zip would be refused here
            assert meta["format"] == "prefrl.policy"
            agent = load_agent("auto", path, make_vec_env("CartPole-v1"))
            assert agent.num_timesteps == section(meta, "counters")["num_timesteps"] > 0


def test_no_run_writer_writes_a_pickle(runs: dict[str, Path], tmp_path: Path) -> None:
    written = {
        name: sorted(p.name for p in root.rglob("*") if p.is_file())
        for name, root in runs.items()
        if root.is_dir()
    }
    assert "index.html" in written["reward_from"] and any(n.endswith(".mp4") for n in written["train"])
    assert "preferences.npz" in written["offline"] and any("tfevents" in n for n in written["train"])
    found = [m for root in runs.values() for m in scan(root, tmp_path)]
    assert not found, "\n".join(found)


def test_an_off_policy_run_writes_no_pickle(tmp_path: Path) -> None:
    run = tmp_path / "sac"
    args = ["train", "--run-dir", str(run), "--env.id", "Pendulum-v1", "--loop.total-steps", "300",
            "--loop.iterations", "2", "--loop.initial-steps", "100", "--loop.total-labels", "4",
            "--loop.fragment-length", "10", "--agent.net-arch", "8", "--eval-episodes", "1", "--no-progress",
            "--no-page"]  # fmt: skip
    assert main(args) == 0
    assert list(run.rglob("replay_buffer.npz"))  # its checkpoints hold the replay buffer
    for path in policies(run):
        read_policy(path)
    found = scan(run, tmp_path)
    assert not found, "\n".join(found)
