"""The run watch's restore action: the run ends with the policy its final reward rates best.

A reward that was wrong for a while (it paid a behaviour the next labels showed was bad)
leaves the agent where that reward led it, and a policy that has unlearned a gait may not
find it again in the steps left. With ``LoopConfig.watch_restore`` the loop keeps, each
iteration, a copy of the agent's policy as it stands when the iteration's episodes are
gathered (the policy that played the newest of them) together with the last episodes it
played. When training ends, the reward, trained on every label by then, scores every kept
policy's episodes by what the agent is paid (the sum over an episode of
``reward - absorbing``); where an earlier policy's episodes score above the final policy's
by more than ``LoopConfig.watch_restore`` standard errors, the run ends with that policy.
During the run the same comparison is only logged (``watch/restore_gap``: the best earlier policy's lead in
standard errors under the reward as it stands), since giving a policy back mid-run on a
reward still being learned cost progress (docs/techniques.md, the run watch).

No true reward is read, so it works with people; ``watch/restored_from_end`` in
``metrics.csv`` and the run's report say when it acted. The copies live in memory and in the
checkpoints (``restore.safetensors``: each kept policy's parameters and step;
``restore.npz``: their episodes), so a resumed run ends as the uninterrupted one would have.
Their episodes are held to :data:`BUDGET_BYTES` in all, so image runs pay a bounded amount of
memory. A policy whose last two complete episodes alone are larger than its share (long Atari
games: Enduro's and Pong's episodes last thousands of steps) is kept with windows instead: its
newest steps cut into pieces of :data:`WINDOW` steps, each scored as an episode is. Windows are
compared only with windows (a policy kept with episodes and one kept with windows are not
compared: an episode's sum and a window's are not on one scale), and only for the restart's
trial (``LoopConfig.agent_reset_trial``) and the logged signals: the end's restore gives back
only policies kept with episodes, the measure it was tried with. SB3 agents (PyTorch state
dicts, cloned) and SBX agents (flax train states) both go back whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from prefrl.agents.policy_io import jax_owners, jax_state_tensors, jax_train_states, set_jax_states
from prefrl.data.arrays import obs_map
from prefrl.data.trajectories import Trajectory, TrajectoryBatch
from prefrl.rewards.nets import RewardNet
from prefrl.storage.checkpoint import load_tensor_state, save_tensor_state

KEEP = 8
"""Policies kept (the newest; for an image agent each copy also holds its episodes' frames)."""
TAIL_STEPS = 3000
"""A policy is judged on the last complete episodes of its batch that make up this many steps."""
MIN_EPISODES = 2
"""Policies with fewer complete episodes than this are never compared."""
BUDGET_BYTES = 256 * 2**20
"""Bytes of kept observations over all kept policies (each policy gets an equal share)."""
WINDOW = 250
"""Steps of each window of a policy kept with windows (its episodes outlast its share)."""
CHUNK = 1024
"""Transitions per reward pass while scoring."""
PARAMS_FILE, EPISODES_FILE = "restore.safetensors", "restore.npz"
"""A checkpoint's files of the kept policies: parameters and steps; episodes."""


@dataclass
class Snapshot:
    """One kept policy: the environment step it was taken at, its parameters, and its last
    complete episodes (each observation stored once)."""

    env_steps: int
    params: dict[str, Any]
    episodes: TrajectoryBatch
    windows: bool = False
    """Whether ``episodes`` are windows of :data:`WINDOW` steps rather than whole episodes."""


def clone(tree: Any) -> Any:
    """A copy of a nest of dicts and lists whose tensors are cloned (other leaves shared)."""
    if isinstance(tree, torch.Tensor):
        return tree.detach().clone()
    if isinstance(tree, dict):
        return {k: clone(v) for k, v in tree.items()}
    if isinstance(tree, list | tuple):
        return type(tree)(clone(v) for v in tree)
    return tree


def row_bytes(obs: Any) -> float:
    """Bytes one observation row takes (``obs``: ``[S, ...]`` or a dict of such arrays)."""
    leaves = obs.values() if isinstance(obs, dict) else [obs]
    return float(sum(np.asarray(a).nbytes / max(len(a), 1) for a in leaves))


def tail(
    batch: TrajectoryBatch, steps: int = TAIL_STEPS, max_bytes: float = BUDGET_BYTES / KEEP
) -> TrajectoryBatch | None:
    """The last complete episodes of ``batch`` that make up at least ``steps`` transitions
    (all of them if fewer), as many as fit in ``max_bytes`` of observations; ``None`` with
    fewer than :data:`MIN_EPISODES` (complete, or within the bytes)."""
    done = np.flatnonzero((batch.terminated | batch.truncated) & (batch.lengths > 0))
    if len(done) < MIN_EPISODES:
        return None
    total = np.cumsum(batch.lengths[done][::-1])
    n = max(MIN_EPISODES, int(np.searchsorted(total, steps)) + 1)
    rows = np.cumsum(batch.lengths[done][::-1] + 1) * row_bytes(batch.obs)  # bytes of the last k
    n = min(n, int(np.searchsorted(rows, max_bytes, side="right")))
    if n < MIN_EPISODES:
        return None
    return TrajectoryBatch.from_trajectories([batch.episode(int(i)) for i in done[-n:]])


def _rows(obs: Any, rows: slice) -> Any:
    """``rows`` of an observation array (or of each array of a dict of them)."""
    return obs_map(lambda a: a[rows], obs)


def windows(
    batch: TrajectoryBatch, steps: int = TAIL_STEPS, max_bytes: float = BUDGET_BYTES / KEEP
) -> TrajectoryBatch | None:
    """The newest steps of ``batch`` cut into windows of :data:`WINDOW` steps, each within one
    episode (finished or not), newest first back to at least ``steps`` transitions, as many as
    fit in ``max_bytes`` of observations (:data:`WINDOW` + 1 rows each); ``None`` with fewer than
    :data:`MIN_EPISODES`. A window that reaches its episode's terminal end keeps ``terminated``."""
    fit = int(max_bytes // ((WINDOW + 1) * row_bytes(batch.obs)))
    want = min(fit, max(MIN_EPISODES, -(-steps // WINDOW)))
    cut: list[Trajectory] = []
    for i in range(len(batch) - 1, -1, -1):  # the newest episode first
        if len(cut) >= want:
            break
        ep = batch.episode(i)
        for end in range(len(ep), WINDOW - 1, -WINDOW):  # from the episode's end backwards
            if len(cut) >= want:
                break
            s = end - WINDOW
            cut.append(
                Trajectory(
                    obs=_rows(ep.obs, slice(s, end + 1)),
                    acts=ep.acts[s:end],
                    rews=None if ep.rews is None else ep.rews[s:end],
                    terminated=ep.terminated and end == len(ep),
                    truncated=not (ep.terminated and end == len(ep)),
                )
            )
    if len(cut) < MIN_EPISODES:
        return None
    return TrajectoryBatch.from_trajectories(cut[::-1])


ENT_COEF = "log_ent_coef"
"""The key of an SB3 SAC agent's learned entropy coefficient (log) among its copied parameters
(no policy state dict has it)."""


def agent_params(agent: Any) -> dict[str, Any]:
    """A copy of an agent's policy parameters (every network that acts or evaluates): SB3's
    policy state dict, cloned, with a SAC agent's learned entropy coefficient
    (:data:`ENT_COEF`), or SBX's flax train states (their arrays are immutable; the containers
    are rebuilt, since SBX sets the learning rate in place)."""
    states = jax_train_states(agent)
    if states:
        return {"jax": _rebuilt(states)}
    params = clone(dict(agent.policy.state_dict()))
    log_ent = getattr(agent, ENT_COEF, None)
    if isinstance(log_ent, torch.Tensor):
        params[ENT_COEF] = log_ent.detach().clone()
    return params


def _rebuilt(states: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """SBX train states by owner and name, each a new tree over the same (immutable) arrays."""
    import jax

    def copy(st: Any) -> Any:
        return jax.tree_util.tree_map(lambda x: x, st)

    return {owner: {k: copy(st) for k, st in of.items()} for owner, of in states.items()}


def set_agent_params(agent: Any, params: dict[str, Any]) -> None:
    """Load a copy made by :func:`agent_params` into ``agent`` (the copy stays untouched)."""
    if set(params) == {"jax"}:
        owners = jax_owners(agent)
        for owner, states in _rebuilt(params["jax"]).items():
            for name, state in states.items():
                setattr(owners[owner], name, state)
        return
    params = dict(params)
    log_ent = params.pop(ENT_COEF, None)  # copies from before it was kept have none
    agent.policy.load_state_dict(clone(params))
    live = getattr(agent, ENT_COEF, None)
    if log_ent is not None and isinstance(live, torch.Tensor):
        with torch.no_grad():  # in place: the entropy optimiser holds this very tensor
            live.copy_(log_ent)


class AgentRestore:
    """Keeps the agent's recent policies and ends the run with the one its reward rates best
    (see the module docstring).

    Args:
        net: the reward being learned (its ensemble mean scores episodes).
        margin: the standard errors of the difference by which an earlier policy must beat
            the newest to be given back at the end.
    """

    def __init__(self, net: RewardNet, margin: float) -> None:
        self.net = net
        self.margin = margin
        self.kept: list[Snapshot] = []

    def remember(self, agent: Any, batch: TrajectoryBatch, env_steps: int) -> None:
        """Keep ``agent``'s parameters now with the last complete episodes of ``batch`` (the
        episodes it played since the last call); nothing when ``batch`` has too few."""
        last, cut = tail(batch), False
        if last is None:  # episodes too few or too long for the share: windows of the newest steps
            last, cut = windows(batch), True
        if last is None:
            return
        self.kept.append(Snapshot(env_steps, agent_params(agent), last, cut))
        del self.kept[:-KEEP]

    def scores(self) -> list[np.ndarray]:
        """Each kept policy's episodes ``[k_j]``, scored by the reward as it stands: the sum over
        each episode of ``reward - absorbing`` (what the agent is paid). Every kept episode goes
        through the reward in one chunked pass."""
        every = TrajectoryBatch.concat([s.episodes for s in self.kept])
        rows = every.step_rows
        r = np.concatenate(
            [self.net.predict_members(*every.transitions(rows[i : i + CHUNK])).mean(0)
             for i in range(0, len(rows), CHUNK)]
        )  # fmt: skip
        episode = np.repeat(np.arange(len(every)), every.lengths)  # [n]: the episode of each step
        per_episode = np.bincount(episode, weights=r - self.net.absorbing_value(), minlength=len(every))
        return np.split(per_episode, np.cumsum([len(s.episodes) for s in self.kept])[:-1])

    def lead(self, scores: list[np.ndarray] | None = None) -> tuple[int, float]:
        """The best earlier kept policy and its lead over the newest, in standard errors of
        the difference (pooled over every kept policy's episodes), under the reward as it
        stands (``scores``: :meth:`scores`, if already computed); ``(-1, nan)`` with fewer
        than two kept."""
        like = self._like()[:-1]
        if not like:
            return -1, float("nan")
        scores = self.scores() if scores is None else scores
        best = like[int(np.argmax([scores[j].mean() for j in like]))]
        return best, _lead(scores, best, -1, self._like())

    def _like(self) -> list[int]:
        """The kept policies kept as the newest is (with episodes, or with windows), the newest last."""
        return [j for j, s in enumerate(self.kept) if s.windows == self.kept[-1].windows]

    def climb(self, scores: list[np.ndarray] | None = None) -> float:
        """How far the newest kept policy's episodes score above the oldest kept policy's under
        the reward as it stands, in standard errors of the difference (pooled as in
        :meth:`lead`); ``nan`` with fewer than two kept. Near 0 or below: the agent has not
        improved, by its current reward, over the window the copies span."""
        like = self._like()[:-1]
        return self.newest_over(self.kept[like[0]].env_steps, scores) if like else float("nan")

    def newest_over(self, env_steps: int, scores: list[np.ndarray] | None = None) -> float:
        """The newest kept policy's lead over the kept policy taken at ``env_steps``, in standard
        errors of the difference (pooled as in :meth:`lead`), under the reward as it stands;
        ``nan`` where no such policy is kept or it is the newest."""
        at = [j for j, s in enumerate(self.kept[:-1]) if s.env_steps == env_steps]
        if not at or self.kept[at[-1]].windows != self.kept[-1].windows:
            return float("nan")
        return _lead(self.scores() if scores is None else scores, -1, at[-1], self._like())

    def give_back(self, agent: Any, env_steps: int) -> None:
        """Load the kept policy taken at ``env_steps`` into ``agent`` (it then stands for the
        newest, as in :meth:`choose`)."""
        self._bring_back(agent, next(j for j, s in enumerate(self.kept) if s.env_steps == env_steps))

    def _bring_back(self, agent: Any, j: int) -> None:
        set_agent_params(agent, self.kept[j].params)
        self.kept.append(self.kept.pop(j))  # the agent's policy now: the newest

    def check(self) -> dict[str, float]:
        """``watch/restore_gap``: the best earlier policy's lead over the newest, and
        ``watch/climb`` (:meth:`climb`); signals only, from one pass of the reward."""
        if len(self.kept) < 2:
            return {}
        scores = self.scores()
        return {"watch/restore_gap": self.lead(scores)[1], "watch/climb": self.climb(scores)}

    def choose(self, agent: Any) -> dict[str, float]:
        """The end of training: give ``agent`` the best earlier policy where it leads the
        newest by more than ``margin`` (policies kept with episodes only). Returns
        ``watch/restore_gap`` and, where it acted, ``watch/restored_from`` (the environment
        step of the policy given back)."""
        best, lead = self.lead()
        if best < 0:
            return {}
        out = {"watch/restore_gap": lead}
        if lead > self.margin and not self.kept[-1].windows:  # windows: the trial's and the signals' only
            out["watch/restored_from"] = float(self.kept[best].env_steps)
            self._bring_back(agent, best)
        return out

    # ------------------------------------------------------------------ checkpoints
    def save_files(self, path: Path) -> None:
        """The kept policies into checkpoint directory ``path``: :data:`PARAMS_FILE` (parameters,
        steps and episode counts) and :data:`EPISODES_FILE` (every kept episode, in order)."""
        if not self.kept:
            return
        params = [s.params for s in self.kept]  # the file's keys are dotted paths: no dots in a key
        if set(params[0]) == {"jax"}:  # leaf tensors by string index
            params = [{"jax": _keyed(jax_state_tensors(p["jax"]), str)} for p in params]
        else:  # a state dict's "actor.mu.weight" as "actor:mu:weight"
            params = [{k.replace(".", ":"): v for k, v in p.items()} for p in params]
        state = {f"p{i}": p for i, p in enumerate(params)}
        state["steps"] = [s.env_steps for s in self.kept]  # type: ignore[assignment]  # a JSON leaf
        state["episodes"] = [len(s.episodes) for s in self.kept]  # type: ignore[assignment]
        state["windows"] = [int(s.windows) for s in self.kept]  # type: ignore[assignment]
        save_tensor_state(state, path / PARAMS_FILE)
        TrajectoryBatch.concat([s.episodes for s in self.kept]).save(path / EPISODES_FILE)

    def load_files(self, path: Path, agent: Any) -> None:
        """The kept policies of checkpoint directory ``path`` (none if it has no such files: an
        older checkpoint or none kept yet); an SBX agent's states are rebuilt on ``agent``'s."""
        self.kept = []
        if not (path / PARAMS_FILE).exists():
            return
        state: Any = load_tensor_state(path / PARAMS_FILE)
        every = TrajectoryBatch.load(path / EPISODES_FILE)
        counts = [int(n) for n in state["episodes"]]
        cut = [bool(w) for w in state.get("windows", [0] * len(counts))]  # older files: episodes
        if sum(counts) != len(every):
            raise ValueError(
                f"{path / EPISODES_FILE}: {len(every)} episodes, the kept policies name {sum(counts)}"
            )
        live = agent_params(agent) if jax_train_states(agent) else None
        starts = np.cumsum([0, *counts])
        for i, (step, n, w) in enumerate(zip(state["steps"], counts, cut, strict=True)):
            params = state[f"p{i}"]
            if live is not None:  # SBX: the leaves go into the agent's own tree structure
                set_jax_states(agent, _keyed(params["jax"], int))
                params = agent_params(agent)
            else:
                params = {k.replace(":", "."): v for k, v in params.items()}
            episodes = [every.episode(int(j)) for j in range(starts[i], starts[i] + n)]
            self.kept.append(Snapshot(int(step), params, TrajectoryBatch.from_trajectories(episodes), w))
        if live is not None:
            set_agent_params(agent, live)


def _lead(scores: list[np.ndarray], a: int, b: int, pool: list[int]) -> float:
    """How far kept policy ``a``'s episode scores lie above policy ``b``'s, in standard errors
    of the difference (the variance pooled over the kept policies ``pool``, those kept as ``a``
    and ``b`` are: with episodes or with windows; each has >= 2), held within +-1e6."""
    pooled = np.mean([scores[j].var(ddof=1) for j in pool])
    se = float(np.sqrt(pooled * (1 / len(scores[a]) + 1 / len(scores[b]))))
    gap = float(scores[a].mean() - scores[b].mean())
    lead = gap / se if se > 0 else (np.inf if gap > 0 else 0.0)
    return float(np.clip(lead, -1e6, 1e6))


def _keyed(tree: Any, key: type) -> Any:
    """``tree`` (SBX leaves by owner, name and index) with its leaf indices made ``key``s."""
    return {
        o: {k: {key(i): t for i, t in leaves.items()} for k, leaves in of.items()} for o, of in tree.items()
    }
