"""The environment-process side of the preference wrapper, for ``n`` parallel envs.

:class:`PreferenceCore` records transitions of ``n`` environments into segment buffers
``[n, L+1, ...]`` (one NumPy assignment per array per step for all envs), ships finished
segments to the labeller, picks up published reward weights (one integer read per step)
and predicts the learned reward with one batched forward pass per step.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
from gymnasium import spaces

from prefrl.preference_env import shared_memory as sh
from prefrl.preference_env.config import PreferenceEnvConfig
from prefrl.preference_env.rewarder import overlappable, request_fields
from prefrl.preference_env.ring import RingSpec
from prefrl.preference_env.runtime import Runtime
from prefrl.rewards.cnn import CNNReward
from prefrl.rewards.config import RewardNetConfig
from prefrl.rewards.inference import RewardFn, reward_fn
from prefrl.rewards.io import load_reward_net
from prefrl.rewards.nets import RewardNet
from prefrl.rewards.normalization import RewardNormalizer

ObsTransform = Callable[[np.ndarray], np.ndarray]
"""Maps a batch of observations or frames ``[n, ...]`` to what the reward model sees ``[n, ...]``."""


def space_of(x: np.ndarray) -> spaces.Box:
    """A Box for one reward input ``x`` (uint8 images stay uint8)."""
    if x.dtype == np.uint8:
        return spaces.Box(0, 255, x.shape, np.uint8)
    if not np.issubdtype(x.dtype, np.number):
        raise TypeError(f"reward inputs must be numeric arrays, got dtype {x.dtype}; use obs_transform")
    return spaces.Box(-np.inf, np.inf, x.shape, np.float32)


REWARDER_MIN_ENVS = 4
"""``reward_process=None`` starts the rewarder from this many envs (see the config)."""


def default_config(obs_space: spaces.Space[object], act_space: spaces.Space[object]) -> RewardNetConfig:
    """The config of the network the wrapper trains when given none: ``prefrl train``'s default
    (:class:`RewardNetConfig`), resolved for the spaces by the same
    :meth:`~prefrl.rewards.config.RewardNetConfig.resolved`: three MLPs of 64x64 reading s, a and
    s' for state observations; for images three CNNs, keypoints of s and s' for images up to
    64 px a side, a flat CNN with a head per Discrete action above. Its ``output`` stays
    ``auto`` (built as linear): the wrapper has no environment of its own to probe."""
    return RewardNetConfig().resolved(obs_space, act_space)


def default_net(obs_space: spaces.Box, act_space: spaces.Space[object]) -> RewardNet:
    """The reward network the wrapper trains when it is given none (:func:`default_config`)."""
    return default_config(obs_space, act_space).build(obs_space, act_space)


class PreferenceCore:
    """Recording, labelling hand-off and reward prediction for ``n`` environments."""

    def __init__(
        self,
        n: int,
        act_space: spaces.Space[object],
        config: PreferenceEnvConfig,
        reward_net: RewardNet | None,
        obs_transform: ObsTransform | None,
    ) -> None:
        self.n, self.act_space, self.config = n, act_space, config
        self.transform = obs_transform
        self.net = reward_net
        if config.reward_path is not None:
            if reward_net is not None:
                raise ValueError("give either reward_net or config.reward_path, not both")
            self.net = load_reward_net(config.reward_path)
        self.runtime: Runtime | None = None
        self.reward: RewardFn | None = None
        self.forced: str | None = None  # "true" / "learned" set by the user
        self.version = 0
        self.published_steps = 0
        self.mean, self.std = 0.0, 1.0
        self.running = RewardNormalizer(clip=np.inf)  # raw predictions, until the trainer publishes
        self.stats = {"segments_recorded": 0, "segments_sent": 0, "segments_dropped": 0, "weight_updates": 0}
        self.steps = 0
        self.episode_counter = 0
        self._began: bool | None = None  # set by begin(): whether this step returns learned rewards
        self._pending = False  # a reward request to the rewarder awaits collection

    # ------------------------------------------------------------ set-up
    def inputs(self, obs: np.ndarray) -> np.ndarray:
        """Reward inputs ``[n, ...]`` from raw observations or frames ``[n, ...]``."""
        x = self.transform(obs) if self.transform is not None else obs
        x = np.asarray(x)
        if x.dtype == np.float64:
            x = x.astype(np.float32)
        return x

    def start(self, x: np.ndarray, frames: np.ndarray | None) -> None:
        """Allocate buffers and start the background processes, given first inputs ``[n, ...]``."""
        if x.shape[0] != self.n:
            raise ValueError(f"obs_transform must keep the batch dimension {self.n}, got shape {x.shape}")
        c, L, n = self.config, self.config.fragment_length, self.n
        obs_space = space_of(x[0])
        if self.net is None:
            self.net = default_net(obs_space, self.act_space)
        else:
            want_shape = self.net.observation_space.shape
            if tuple(want_shape or ()) != x.shape[1:]:
                raise ValueError(
                    f"the reward model expects inputs of shape {want_shape}, "
                    f"but the wrapper records {x.shape[1:]}"
                    " (check obs_transform / record)"
                )
        self.net.eval()
        self.reward = reward_fn(self.net)
        state = self.net.state_dict()
        act = np.asarray(self.act_space.sample())
        ring = None
        if c.labels:
            if c.wants_frames and frames is None:
                raise ValueError("record_frames needs render_mode='rgb_array' on the wrapped environment")
            ring = RingSpec(
                slots=c.queue_size + n,
                length=L,
                obs_shape=tuple(x.shape[1:]),
                obs_dtype=x.dtype.str,
                act_shape=tuple(act.shape),
                act_dtype=act.dtype.str,
                frame_shape=tuple(frames.shape[1:]) if c.wants_frames and frames is not None else None,
            )
        rewarder = None
        want = c.reward_process
        if want is None:  # one env steps too quickly to hide the hand-off; it needs a CPU of its own
            cpus = os.cpu_count() or 1
            free_cpu = cpus >= 4 or (cpus >= 2 and c.niceness >= 20)
            want = n >= REWARDER_MIN_ENVS and free_cpu and isinstance(self.net, CNNReward)
        if want and (c.labels or c.trains) and overlappable(self.net):
            rewarder = request_fields(n, x, act[None].repeat(n, 0))
        self.runtime = Runtime(c, state, self.net.config, ring, rewarder)
        self.version = self.runtime.board.version()
        self.cur = x.copy()
        if self.runtime.ring is None:
            return
        arr = self.runtime.ring.arrays
        S = arr["obs"].shape[0]  # the ring's slots
        self.seg_obs, self.seg_meta = arr["obs"], arr["meta"]  # [S, L+1, ...], [S, 2]
        self.seg_frames = arr.get("frames")
        # flat row views: one fancy index per array and step for all envs
        self._obs_rows = self.seg_obs.reshape(S * (L + 1), *x.shape[1:])
        self._acts_rows = arr["acts"].reshape(S * L, *act.shape)
        self._rews_rows = arr["rews"].reshape(S * L)
        self._dones_rows = arr["dones"].reshape(S * L)
        self._frame_rows = None
        if self.seg_frames is not None:
            self._frame_rows = self.seg_frames.reshape(S * (L + 1), *self.seg_frames.shape[2:])
        self.slot = np.arange(n)  # the ring slot each env is filling
        self._row_t = self.slot * L  # its first row in the flat [S*L, ...] views
        self._row_o = self.slot * (L + 1) + 1  # its row for the obs after the first step in [S*(L+1), ...]
        self._until_full = L
        self.free = list(range(S - 1, n - 1, -1))  # slots nobody uses (popped from the end)
        self._all = np.arange(n)
        self.pos = np.zeros(n, np.int64)
        self.active = np.zeros(n, bool)
        self.episode = np.zeros(n, np.int64)
        self.t = np.zeros(n, np.int64)

    # ------------------------------------------------------------ recording
    @property
    def _live(self) -> Runtime:
        """The started runtime (:meth:`start` has run)."""
        assert self.runtime is not None
        return self.runtime

    @property
    def _model(self) -> RewardNet:
        """The reward network (built by :meth:`start` when not given)."""
        assert self.net is not None
        return self.net

    def on_reset(self, x: np.ndarray, frames: np.ndarray | None, idx: np.ndarray) -> None:
        """Envs ``idx`` started new episodes with reward inputs ``x [n, ...]``."""
        if self.runtime is None:
            self.start(x, frames)
        self._live.check()
        self.cur[idx] = x[idx]
        if self._live.ring is None or len(idx) == 0:
            return
        self.pos[idx] = 0
        self.active[idx] = True
        self.t[idx] = 0
        self.episode[idx] = self.episode_counter + np.arange(len(idx))
        self.episode_counter += len(idx)
        self.seg_obs[self.slot[idx], 0] = x[idx]
        if self.seg_frames is not None and frames is not None:
            self.seg_frames[self.slot[idx], 0] = frames[idx]
        self._refresh_until_full()

    def record(
        self,
        acts: np.ndarray,
        x: np.ndarray,
        rews: np.ndarray,
        terminated: np.ndarray,
        ended: np.ndarray,
        frames: np.ndarray | None,
        idx: np.ndarray,
    ) -> None:
        """Record transitions of envs ``idx`` into their ring slots; hand over full segments."""
        L = self.config.fragment_length
        if idx is self._all and self.active.all():  # the common case: plain indexing, no input copies
            self._write(self._row_t + self.pos, self._row_o + self.pos, acts, rews, terminated, x, frames)
            self.pos += 1
            self.t += 1
            self._until_full -= 1
            if self._until_full <= 0:
                self._hand_over(np.flatnonzero(self.pos == L), x, frames)
            if ended.any():
                self._end(ended)
            return
        i = idx[self.active[idx]]
        p = self.pos[i]
        fi = frames[i] if frames is not None else None
        self._write(self._row_t[i] + p, self._row_o[i] + p, acts[i], rews[i], terminated[i], x[i], fi)
        self.pos[i] += 1
        self.t[i] += 1
        full = np.flatnonzero(self.pos == L)
        if len(full):
            self._hand_over(full, x, frames)
        mask = np.zeros(self.n, bool)
        mask[idx] = ended[idx]
        self._end(mask)

    def _write(
        self,
        row_t: np.ndarray,
        row_o: np.ndarray,
        acts: np.ndarray,
        rews: np.ndarray,
        dones: np.ndarray,
        x: np.ndarray,
        frames: np.ndarray | None,
    ) -> None:
        """Write ``m`` transitions at flat ring rows ``row_t [m]`` (and their next obs at ``row_o [m]``)."""
        self._acts_rows[row_t] = acts
        self._rews_rows[row_t] = rews
        self._dones_rows[row_t] = dones
        self._obs_rows[row_o] = x
        if self._frame_rows is not None and frames is not None:
            self._frame_rows[row_o] = frames

    def _end(self, ended: np.ndarray) -> None:
        """Envs ``ended`` (``[n]`` bool) finished episodes: their partial segments are dropped."""
        self.active[ended] = False
        self._refresh_until_full()

    def _refresh_until_full(self) -> None:
        """Steps until the next active env fills its segment (then :meth:`record` looks which)."""
        pos = self.pos[self.active]
        self._until_full = self.config.fragment_length - (int(pos.max()) if len(pos) else 0)

    def _hand_over(self, full: np.ndarray, x: np.ndarray, frames: np.ndarray | None) -> None:
        """Give the full segments of envs ``full`` to the labeller; start their next ones."""
        L = self.config.fragment_length
        m = len(full)
        self.stats["segments_recorded"] += m
        if len(self.free) < m:
            self.free.extend(self._live.take_free())
        sent = full[: len(self.free)]  # the rest are dropped: the labeller is behind; their slots refill
        if len(sent):
            ready = self.slot[sent]
            self.seg_meta[ready, 0] = self.episode[sent]
            self.seg_meta[ready, 1] = self.t[sent] - L
            self._live.send_ready(ready)
            cut = len(self.free) - len(sent)
            new = np.array(self.free[cut:], np.int64)
            del self.free[cut:]
            self.slot[sent] = new
            self._row_t[sent], self._row_o[sent] = new * L, new * (L + 1) + 1
        self.stats["segments_sent"] += len(sent)
        self.stats["segments_dropped"] += m - len(sent)
        self.pos[full] = 0
        self.seg_obs[self.slot[full], 0] = x[full]
        if self.seg_frames is not None and frames is not None:
            self.seg_frames[self.slot[full], 0] = frames[full]
        self._refresh_until_full()

    # ------------------------------------------------------------ reward
    def poll(self) -> None:
        """Pick up newly published weights; raise background errors (cheap: two int reads)."""
        rt = self.runtime
        if rt is None:
            return
        board = rt.board
        if board.ints[sh.ERROR]:
            rt.check()
        self.steps += 1
        if self.steps % 512 == 0:
            rt.check()
        v = int(board.ints[sh.VERSION])
        if v != self.version and v % 2 == 0:
            got = board.read()
            if got is not None:
                self.version, state, mean, std, steps = got
                self._model.load_state_dict(state)
                self.reward = None  # rebuilt when next needed here (the rewarder keeps its own)
                if steps > 0:
                    self.mean, self.std, self.published_steps = mean, std, steps
                self.stats["weight_updates"] += 1

    @property
    def learned_active(self) -> bool:
        if self.forced is not None:
            return self.forced == "learned"
        if self.config.mode == "pretrained":
            return True
        return self.runtime is not None and self.published_steps >= self.config.learned_after

    def begin(self, acts: np.ndarray) -> None:
        """Before the wrapped env steps with ``acts [n, ...]``: start the rewarder on this step."""
        if self.runtime is None:
            return
        if self._pending:  # the previous step never finished (the env raised): drop its answer
            self.runtime.collect_reward()
            self._pending = False
        self.poll()
        self._began = self.learned_active
        if self._began and self.runtime.requests is not None:
            rows = None
            if self.runtime.ring is not None:  # each env's current obs is its ring row (slot, pos)
                rows = self._row_o - 1 + self.pos
            self.runtime.submit_reward(self.cur, acts, rows)
            self._pending = True

    def predict(
        self, prev: np.ndarray, acts: np.ndarray, x: np.ndarray, terminated: np.ndarray
    ) -> np.ndarray:
        """Learned reward ``[n]`` (float64, normalised if configured) for one step of all envs."""
        if self._pending:  # computed by the rewarder while the env stepped
            r, mean, std, steps = self._live.collect_reward()
            self._pending = False
            return self.normalize(r, mean, std, steps)
        if self.reward is None:
            self.reward = reward_fn(self._model)
        r = self.reward(prev, np.asarray(acts), x, terminated)  # [n] float64, ensemble mean
        return self.normalize(r, self.mean, self.std, self.published_steps)

    def normalize(self, r: np.ndarray, mean: float, std: float, steps: int) -> np.ndarray:
        """Raw rewards ``[n]`` normalised by the trainer's statistics (running ones before it has any)."""
        if not self.config.normalize:
            return r
        if steps == 0:  # no statistics from the trainer yet: running ones
            self.running.update(r)
            return self.running(r).astype(np.float64)
        return (r - mean) / std

    def step(
        self,
        acts: np.ndarray,
        x: np.ndarray,
        rews: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        frames: np.ndarray | None,
        reset_step: np.ndarray | None,
    ) -> tuple[np.ndarray, bool]:
        """One step of all envs; returns the rewards ``[n]`` to give and whether they are learned.

        Args:
            acts: ``[n, ...]`` actions taken.
            x: ``[n, ...]`` reward inputs after the step.
            rews, terminated, truncated: ``[n]`` from the wrapped env.
            frames: ``[n, H, W, 3]`` rendered frames (when recorded) or ``None``.
            reset_step: ``[n]`` bool, envs whose step was an autoreset (no transition), or ``None``.
        """
        if self._began is not None:  # begin() polled and decided
            learned, self._began = self._began, None
        else:
            self.poll()
            learned = self.learned_active
        resets = reset_step is not None and bool(reset_step.any())
        if learned:
            out = self.predict(self.cur, acts, x, terminated)
            if resets:
                out[reset_step] = 0.0
        else:
            out = rews.astype(np.float64)
        if self.runtime is not None and self.runtime.ring is not None:
            idx = np.flatnonzero(~reset_step) if resets and reset_step is not None else self._all
            self.record(acts, x, rews, terminated, terminated | truncated, frames, idx)
            if resets:
                idx_reset = reset_step if reset_step is not None else np.zeros(0, bool)  # resets: not None
                self.on_reset(x, frames, np.flatnonzero(idx_reset))
        self.cur[...] = x
        return out, learned

    # ------------------------------------------------------------ misc
    def metrics(self) -> dict[str, int | str]:
        m: dict[str, int | str] = dict(self.stats)
        if self.runtime is not None and not self.runtime.closed:
            m.update(self.runtime.board.counters())
        m["reward_source"] = "learned" if self.learned_active else "true"
        return m

    def save_preferences(self, path: str, val_fraction: float | None) -> list[str]:
        if self.runtime is None:
            raise RuntimeError("the environment has not been reset yet: nothing was recorded")
        paths = self.runtime.request(("save", str(path), val_fraction))
        if not isinstance(paths, list):
            raise RuntimeError(f"the trainer process answered 'save' with {paths!r}, not a list of paths")
        return [str(p) for p in paths]

    def close(self) -> None:
        if self.runtime is not None:
            self.runtime.shutdown()
