"""Threads in the learned-reward integrations on a loaded machine: as users start them vs one thread.

    python benchmarks/integration_threads.py --part zoo cleanrl
    python benchmarks/integration_threads.py --part reward-from

Every measurement is a fresh process, run as a user starts it (``default``: no
``OMP_NUM_THREADS``, no thread option) and with ``OMP_NUM_THREADS=1`` (``omp1``: every library
on one thread from the start), while one busy-loop process per core competes for the CPU, as
other people's jobs do on a shared machine (``--load 0``: none). Rounds alternate the two; the
slower variants kept for comparison (:data:`SLOW`) run in the first round only.

- ``zoo``: RL Baselines3 Zoo (``python -m rl_zoo3.train``, SAC on Pendulum-v1) with prefrl's
  ``zoo_wrapper`` in its hyperparameter file, as docs/integrations.md shows; ``zoo_null`` is the
  same with ``threads: null`` (the Zoo's own default threads: how it ran before the wrapper set
  them). A :class:`StepClock` wrapper above prefrl's times the loop, from the first environment
  step to the last, and the learned reward's calls within it.
- ``cleanrl``: the CleanRL-style PPO of examples/cleanrl_learned_reward.py
  (``LearnedRewardVectorWrapper``), timed around its ``train()``, the learned reward's calls too;
  ``all_cores`` gives its agent one torch thread per core (``--threads``), as a loop that does not
  set them gets: the wrapper keeps its own reward on one thread, not the loop's agent.
- ``reward-from``: ``prefrl train --reward-from RUN`` (SAC); its ``report.json``'s
  ``train_wall_s`` (the agent's training steps, reward included).

The reward is a run directory made here: the default reward network for Pendulum-v1 (random
weights: inference costs the same) with saved normalisation statistics. The last line printed is
the JSON written to ``--out`` (parts measured earlier stay in the file): per part and variant the
loop's wall and CPU seconds (all threads) and the reward's seconds per round and their medians, and
``ratio_loop`` / ``ratio_cpu`` / ``ratio_reward`` = median default / median omp1 (the target: at
most 1.2). Wall time on a shared machine follows the other jobs' load too: CPU time shows what the
threads themselves cost (spinning threads burn it).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium as gym

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks/results/integrations/threads-Pendulum-v1.json"
ENV_ID = "Pendulum-v1"
PARTS = ("zoo", "cleanrl", "reward-from")
VARIANTS = {
    "zoo": ("default", "omp1", "zoo_null"),
    "cleanrl": ("default", "omp1", "all_cores"),
    "reward-from": ("default", "omp1"),
}
SLOW = ("zoo_null", "all_cores")
"""Variants shown for comparison (how the loop ran before, or runs when left on every core): many
times slower on a loaded machine, so measured in the first round only."""
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


class _TimedReward:
    """Calls the wrapped learned reward, adding the seconds each call takes to ``seconds``."""

    def __init__(self, reward: Any) -> None:
        self._reward, self.seconds = reward, 0.0

    def __call__(self, *args: Any) -> Any:
        t = time.perf_counter()
        out = self._reward(*args)
        self.seconds += time.perf_counter() - t
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reward, name)


class StepClock(gym.Wrapper):
    """Above prefrl's ``zoo_wrapper`` in a Zoo hyperparameter file: times the loop from the first
    step to the last and the learned reward's calls, into ``out`` (JSON) at every episode end and
    when the Zoo closes the environment."""

    def __init__(self, env: gym.Env, out: str) -> None:
        super().__init__(env)
        inner: Any = env
        while not hasattr(inner, "reward"):
            inner = inner.env
        inner.reward = self._timed = _TimedReward(inner.reward)
        self.out, self.steps, self.first, self.first_cpu = out, 0, 0.0, 0.0

    def step(self, action: Any) -> Any:
        if self.steps == 0:
            self.first, self.first_cpu = time.perf_counter(), time.process_time()
        res = self.env.step(action)
        self.steps += 1
        if res[2] or res[3]:
            self._write()
        return res

    def close(self) -> None:  # the Zoo closes its environment when training ends
        self._write()
        super().close()

    def _write(self) -> None:
        clock = {
            "loop_s": time.perf_counter() - self.first,
            "loop_cpu_s": time.process_time() - self.first_cpu,
            "reward_s": self._timed.seconds,
            "steps": self.steps,
        }
        Path(self.out).write_text(json.dumps(clock))


def make_source(root: Path) -> Path:
    """A run directory with the default Pendulum-v1 reward network and saved statistics."""
    from prefrl.rewards.config import RewardNetConfig
    from prefrl.rewards.io import save_reward_net

    env = gym.make(ENV_ID)
    net = RewardNetConfig().build(env.observation_space, env.action_space)
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps({"env": {"id": ENV_ID}, "loop": {"normalize_reward": True}}))
    stats = {"normalize": True, "mean": 0.0, "var": 1.0, "count": 100.0, "center": False}
    save_reward_net(net, root / "reward.safetensors", normalizer=stats)
    return root


def child_env(variant: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    if variant == "omp1":
        env["OMP_NUM_THREADS"] = "1"
    paths = [str(ROOT / "benchmarks"), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


def run_zoo(variant: str, source: Path, steps: int, work: Path) -> dict[str, float]:
    clock = work / "clock.json"
    threads = "        threads: null\n" if variant == "zoo_null" else ""
    (work / "hyper.yml").write_text(
        f"{ENV_ID}:\n  policy: MlpPolicy\n  n_timesteps: {steps}\n  learning_rate: !!float 1e-3\n"
        "  learning_starts: 100\n  env_wrapper:\n    - prefrl.agents.learned_reward.zoo_wrapper:\n"
        f"        run_dir: {source}\n{threads}    - integration_threads.StepClock:\n        out: {clock}\n"
    )
    cmd = [sys.executable, "-m", "rl_zoo3.train", "--algo", "sac", "--env", ENV_ID, "-n", str(steps),
           "-conf", str(work / "hyper.yml"), "-f", str(work / "logs"), "--seed", "0", "--eval-freq", "-1",
           "--device", "cpu", "--verbose", "0"]  # fmt: skip
    ran = _run(cmd, variant, work)
    return {**json.loads(clock.read_text()), **ran}


def run_cleanrl(variant: str, source: Path, steps: int, work: Path) -> dict[str, float]:
    out = work / "clock.json"
    threads = (os.cpu_count() or 1) if variant == "all_cores" else 1
    child = [str(source), str(steps), str(out), str(threads)]
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child-cleanrl", *child]
    ran = _run(cmd, variant, work)
    return {**json.loads(out.read_text()), **ran}


def cleanrl_child(source: str, steps: int, out: str, threads: int) -> None:
    """In the child process: the example's ``train()``, its learned reward's calls timed."""
    from prefrl.agents.saved_reward import SavedReward

    spent = [0.0]
    raw = SavedReward.raw

    def timed(self: SavedReward, *args: Any) -> Any:
        t = time.perf_counter()
        res = raw(self, *args)
        spent[0] += time.perf_counter() - t
        return res

    SavedReward.raw = timed  # type: ignore[method-assign]
    spec = importlib.util.spec_from_file_location(
        "cleanrl_example", ROOT / "examples/cleanrl_learned_reward.py"
    )
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    sys.modules["cleanrl_example"] = example  # its dataclass looks its module up
    spec.loader.exec_module(example)
    num_steps = 128
    args = example.Args(run=source, total_timesteps=steps, num_envs=2, num_steps=num_steps, threads=threads)
    t, cpu = time.perf_counter(), time.process_time()
    example.train(args)
    loop, loop_cpu = time.perf_counter() - t, time.process_time() - cpu
    taken = max(1, steps // (2 * num_steps)) * 2 * num_steps  # whole rollouts, as the example runs them
    Path(out).write_text(
        json.dumps({"loop_s": loop, "loop_cpu_s": loop_cpu, "reward_s": spent[0], "steps": taken})
    )


def run_reward_from(variant: str, source: Path, steps: int, work: Path) -> dict[str, float]:
    run = work / "agent"
    prefrl = Path(sys.executable).with_name("prefrl")
    cmd = [str(prefrl), "train", "--reward-from", str(source), "--run-dir", str(run),
           "--loop.total-steps", str(steps), "--loop.initial-steps", "100", "--eval-episodes", "1",
           "--no-page", "--no-progress"]  # fmt: skip
    ran = _run(cmd, variant, work)
    rep = json.loads((run / "report.json").read_text())
    return {"loop_s": rep["train_wall_s"], **ran, "steps": rep["env_steps"]}


def _run(cmd: list[str], variant: str, work: Path) -> dict[str, float]:
    """Run ``cmd``: its wall seconds (``process_s``) and its threads' CPU seconds (``process_cpu_s``)."""
    t, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    res = subprocess.run(cmd, cwd=work, env=child_env(variant), capture_output=True, text=True, timeout=1800)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({res.returncode}):\n{res.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"process_s": time.perf_counter() - t, "process_cpu_s": cpu}


RUNNERS = {"zoo": run_zoo, "cleanrl": run_cleanrl, "reward-from": run_reward_from}


def start_load(n: int) -> list[subprocess.Popen[bytes]]:
    """``n`` busy-loop processes: the competing CPU load of a shared machine."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def summarize(rounds: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    out: dict[str, Any] = {"rounds": rounds}
    med = {v: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for v, rs in rounds.items()}
    out["median"] = med
    out["ratio_loop"] = med["default"]["loop_s"] / med["omp1"]["loop_s"]
    cpu = "loop_cpu_s" if "loop_cpu_s" in med["default"] else "process_cpu_s"
    out["ratio_cpu"] = (
        med["default"][cpu] / med["omp1"][cpu]
    )  # less at the mercy of other jobs than wall time
    if "reward_s" in med["default"]:
        out["ratio_reward"] = med["default"]["reward_s"] / med["omp1"]["reward_s"]
    for other in sorted(set(med) - {"default", "omp1"}):  # the ways it runs slower, for comparison
        out[f"ratio_loop_{other}"] = med[other]["loop_s"] / med["omp1"]["loop_s"]
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child-cleanrl"]:
        cleanrl_child(argv[1], int(argv[2]), argv[3], int(argv[4]))
        return 0
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--part", nargs="+", choices=PARTS, default=["zoo", "cleanrl"], help="what to measure")
    p.add_argument("--steps", type=int, default=300, help="environment steps per measurement")
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds of the variants")
    p.add_argument(
        "--load", type=int, default=os.cpu_count() or 1, help="busy-loop processes (default: one per core)"
    )
    p.add_argument(
        "--out", type=Path, default=OUT, help="result file (JSON; other parts already in it are kept)"
    )
    a = p.parse_args(argv)
    if a.steps < 256 or a.rounds < 1 or a.load < 0:
        p.error(f"need --steps >= 256 (CleanRL's two envs x 128 steps), --rounds >= 1, --load >= 0; got {a}")
    result: dict[str, Any] = json.loads(a.out.read_text()) if a.out.exists() else {}
    with open("/proc/loadavg") as f:
        load_before = f.read().split()[:3]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the load processes on kill too
    load = start_load(a.load)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            source = make_source(Path(tmp) / "source")
            for part in a.part:
                rounds: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS[part]}
                for k in range(a.rounds):
                    variants = [v for v in VARIANTS[part] if k == 0 or v not in SLOW]
                    order = variants if k % 2 == 0 else variants[::-1]
                    for variant in order:
                        work = Path(tmp) / f"{part}-{variant}-{k}"
                        work.mkdir()
                        res = RUNNERS[part](variant, source, a.steps, work)
                        rounds[variant].append(res)
                        print(f"{part} {variant} round {k}: {json.dumps(res)}", file=sys.stderr, flush=True)
                result.setdefault("parts", {})[part] = {
                    "command": "python benchmarks/integration_threads.py " + " ".join(argv),
                    "steps": a.steps,
                    "load_processes": a.load,
                    "loadavg_before": load_before,
                    "date": time.strftime("%Y-%m-%d %H:%M"),
                    **summarize(rounds),
                }
    finally:
        for proc in load:
            proc.kill()
            proc.wait()
    import torch

    result["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_default_threads": "one per core (torch.get_num_threads() without OMP_NUM_THREADS)",
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
