"""The restore action: the agent gets back an earlier policy its reward now rates higher."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from stable_baselines3 import SAC

from prefrl.agents.rollout import collect_episodes
from prefrl.agents.sb3 import AgentConfig, make_agent, make_env, make_vec_env
from prefrl.data.trajectories import Trajectory, TrajectoryBatch
from prefrl.rewards import MLPReward
from prefrl.training.config import LoopConfig
from prefrl.training.restore import (
    ENT_COEF,
    WINDOW,
    AgentRestore,
    agent_params,
    set_agent_params,
    tail,
    windows,
)
from prefrl.training.watch import describe, summary
from tests.training.test_loop import build


def _cartpole(balanced: bool, seed: int) -> TrajectoryBatch:
    """CartPole episodes: pushed towards the pole's lean (long) or always left (short)."""
    policy = (lambda o: int(o[2] + 0.5 * o[3] > 0)) if balanced else (lambda o: 0)
    return collect_episodes(make_env("CartPole-v1"), n_episodes=4, seed=seed, policy=policy)


def _paid_per_step() -> MLPReward:
    """A CartPole reward whose absorbing state is worth less than every step: longer episodes pay more."""
    env = make_env("CartPole-v1")
    torch.manual_seed(0)
    net = MLPReward(env.observation_space, env.action_space, hidden=(16,), ensemble_size=2)
    with torch.no_grad():
        net.absorbing_reward.fill_(-100.0)
    return net


def _state(agent) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in agent.policy.state_dict().items()}


def _ppo():
    cfg = AgentConfig(algo="ppo", net_arch=[16], n_steps=64, batch_size=32)
    return make_agent(cfg, make_vec_env("CartPole-v1", 1, seed=0))


def _perturb(agent) -> None:
    with torch.no_grad():
        for p in agent.policy.parameters():
            p.add_(torch.randn_like(p))


def test_the_earlier_policy_the_reward_pays_more_is_given_back_at_the_end() -> None:
    agent = _ppo()
    restore = AgentRestore(_paid_per_step(), 2.0)
    restore.remember(agent, _cartpole(True, seed=0), 1000)  # a policy that balanced
    good = _state(agent)
    _perturb(agent)
    restore.remember(agent, _cartpole(False, seed=1), 2000)  # then one that falls at once
    bad = _state(agent)
    signal = restore.check()  # during the run: only said
    assert set(signal) == {"watch/restore_gap", "watch/climb"} and signal["watch/restore_gap"] > 2
    assert signal["watch/climb"] < -2  # the newest policy is paid clearly less than the oldest
    assert all(torch.equal(v, bad[k]) for k, v in _state(agent).items())
    out = restore.choose(agent)
    assert out["watch/restored_from"] == 1000.0 and out["watch/restore_gap"] == signal["watch/restore_gap"]
    assert all(torch.equal(v, good[k]) for k, v in _state(agent).items())
    assert restore.kept[-1].env_steps == 1000  # the policy given back stands for the newest


def test_a_lead_within_the_margin_changes_nothing() -> None:
    agent = _ppo()
    outs = []
    for margin in (0.5, 1e5):
        restore = AgentRestore(_paid_per_step(), margin)
        restore.remember(agent, _cartpole(True, seed=0), 1000)
        restore.remember(agent, _cartpole(False, seed=1), 2000)
        outs.append(restore.choose(agent))
    lead = outs[0]["watch/restore_gap"]
    assert outs[1]["watch/restore_gap"] == lead and 0.5 < lead < 1e5
    assert "watch/restored_from" in outs[0] and "watch/restored_from" not in outs[1]
    for bad in (-1.0, float("nan"), True):  # a bool is a switch's value, not a margin
        with pytest.raises(ValueError, match="watch_restore >= 0, a margin"):
            LoopConfig(watch_restore=bad)


def test_the_newest_policy_stays_when_it_is_paid_as_much_or_more() -> None:
    agent = _ppo()
    restore = AgentRestore(_paid_per_step(), 2.0)
    restore.remember(agent, _cartpole(False, seed=1), 1000)
    _perturb(agent)
    restore.remember(agent, _cartpole(True, seed=0), 2000)
    before = _state(agent)
    out = restore.choose(agent)
    assert "watch/restored_from" not in out and out["watch/restore_gap"] < 0
    assert all(torch.equal(v, before[k]) for k, v in _state(agent).items())
    # the same episodes twice: no lead, nothing done
    same = AgentRestore(_paid_per_step(), 2.0)
    for step in (1000, 2000):
        same.remember(agent, _cartpole(True, seed=0), step)
    assert same.choose(agent) == {"watch/restore_gap": 0.0}


def test_climb_compares_the_newest_kept_policy_with_the_oldest() -> None:
    """watch/climb: positive where the newest policy is paid clearly more than the oldest kept,
    0 for the same episodes, NaN with one policy kept; a policy between them does not count."""
    agent = _ppo()
    restore = AgentRestore(_paid_per_step(), 2.0)
    restore.remember(agent, _cartpole(False, seed=1), 1000)  # falls at once
    assert np.isnan(restore.climb())
    restore.remember(agent, _cartpole(True, seed=0), 2000)  # balances
    rising = restore.climb()
    assert rising > 2
    restore.remember(agent, _cartpole(False, seed=2), 3000)  # falls again: no climb over the window
    assert abs(restore.climb()) < 2 < rising
    same = AgentRestore(_paid_per_step(), 2.0)
    for step in (1000, 2000):
        same.remember(agent, _cartpole(True, seed=0), step)
    assert same.climb() == 0.0


def test_only_policies_with_enough_complete_episodes_are_kept() -> None:
    batch = _cartpole(False, seed=0)
    one = TrajectoryBatch.from_trajectories([batch.episode(0)])
    restore = AgentRestore(_paid_per_step(), 2.0)
    restore.remember(_ppo(), one, 500)
    assert restore.kept == [] and restore.choose(_ppo()) == {} and restore.check() == {}
    last = tail(batch, steps=1)  # at least two episodes, the last ones
    assert last is not None and len(last) == 2
    np.testing.assert_array_equal(last.lengths, batch.lengths[-2:])


def test_kept_episodes_stay_within_their_bytes() -> None:
    batch = _cartpole(True, seed=0)  # 4 long episodes
    per_row = batch.obs.nbytes / len(batch.obs)
    rows = batch.lengths[::-1] + 1  # the last episode first
    three = float(rows[:3].sum() * per_row)
    got = tail(batch, steps=10**6, max_bytes=three)  # room for the last three, not four
    assert got is not None and len(got) == 3 and got.obs.nbytes <= three
    assert tail(batch, steps=10**6, max_bytes=float(rows[:2].sum() * per_row) - 1) is None


def test_sac_policy_goes_back_whole() -> None:
    """Actor, critics, target critics and the learned entropy coefficient: a copy, untouched by
    what follows (a trial's give-back trains on with the entropy the policy had)."""
    cfg = AgentConfig(algo="sac", net_arch=[16], batch_size=32)
    agent = make_agent(cfg, make_vec_env("Pendulum-v1", 1, seed=0), learning_starts=50)
    assert isinstance(agent, SAC)
    agent.learn(120)
    saved = agent_params(agent)
    live, optimiser = agent.log_ent_coef, agent.ent_coef_optimizer  # (ent_coef "auto": both exist)
    assert live is not None and optimiser is not None
    before, entropy = _state(agent), live.detach().clone()
    agent.learn(120)  # trains every network and the entropy coefficient
    assert not all(torch.equal(v, before[k]) for k, v in _state(agent).items())
    assert not torch.equal(live, entropy)
    set_agent_params(agent, saved)
    assert all(torch.equal(v, before[k]) for k, v in _state(agent).items())
    assert torch.equal(live, entropy) and agent.log_ent_coef is live
    assert optimiser.param_groups[0]["params"][0] is live  # it goes on learning it
    agent.learn(60)  # the copy is not the live tensors
    assert all(torch.equal(v, before[k]) for k, v in saved.items() if k != ENT_COEF)
    assert torch.equal(saved[ENT_COEF], entropy)
    old = {k: v for k, v in saved.items() if k != ENT_COEF}  # a copy kept before it was kept
    set_agent_params(agent, old)
    assert all(torch.equal(v, before[k]) for k, v in _state(agent).items())


def test_sbx_policy_goes_back_whole() -> None:
    """SBX (JAX): every flax train state of the agent and its policy."""
    import jax

    cfg = AgentConfig(algo="sac", backend="sbx", net_arch=[16], batch_size=32)
    agent = make_agent(cfg, make_vec_env("Pendulum-v1", 1, seed=0), learning_starts=50)
    agent.learn(120)
    saved = agent_params(agent)
    assert set(saved) == {"jax"} and saved["jax"]["policy"]

    def leaves() -> list[np.ndarray]:
        states = [st for owner in sorted(saved["jax"]) for _, st in sorted(vars(
            agent if owner == "agent" else agent.policy).items()) if _ in saved["jax"][owner]]  # fmt: skip
        return [np.array(x) for st in states for x in jax.tree_util.tree_leaves(st)]

    before = leaves()
    agent.learn(120)
    assert not all(np.array_equal(a, b) for a, b in zip(leaves(), before, strict=True))
    set_agent_params(agent, saved)
    assert all(np.array_equal(a, b) for a, b in zip(leaves(), before, strict=True))
    agent.learn(60)  # trains on from the policy given back; the copy stays as it was
    kept = [np.array(x) for o in sorted(saved["jax"]) for _, st in sorted(saved["jax"][o].items())
            for x in jax.tree_util.tree_leaves(st)]  # fmt: skip
    assert all(np.array_equal(a, b) for a, b in zip(kept, before, strict=True))


def _same_kept(a: AgentRestore, b: AgentRestore) -> None:
    assert [k.env_steps for k in a.kept] == [k.env_steps for k in b.kept]
    for x, y in zip(a.kept, b.kept, strict=True):
        np.testing.assert_array_equal(x.episodes.obs, y.episodes.obs)
        np.testing.assert_array_equal(x.episodes.lengths, y.episodes.lengths)


def test_kept_policies_survive_a_checkpoint(tmp_path) -> None:
    agent = _ppo()
    restore = AgentRestore(_paid_per_step(), 2.0)
    restore.remember(agent, _cartpole(True, seed=0), 1000)
    good = _state(agent)
    _perturb(agent)
    restore.remember(agent, _cartpole(False, seed=1), 2000)
    restore.save_files(tmp_path)
    back = AgentRestore(restore.net, 2.0)
    back.load_files(tmp_path, agent)
    _same_kept(restore, back)
    assert all(torch.equal(v, good[k]) for k, v in back.kept[0].params.items())
    assert back.choose(agent) == restore.choose(_ppo())  # the same choice, the same policy back
    assert all(torch.equal(v, good[k]) for k, v in _state(agent).items())
    empty = AgentRestore(restore.net, 2.0)  # a checkpoint written before any was kept (or older)
    empty.kept = back.kept
    empty.load_files(tmp_path / "none", agent)
    assert empty.kept == []
    (tmp_path / "restore.npz").write_bytes(b"not an npz")
    with pytest.raises(ValueError, match=r"restore\.npz"):
        AgentRestore(restore.net, 2.0).load_files(tmp_path, agent)


def test_sbx_kept_policies_survive_a_checkpoint(tmp_path) -> None:
    import jax

    cfg = AgentConfig(algo="sac", backend="sbx", net_arch=[16], batch_size=32)
    agent = make_agent(cfg, make_vec_env("Pendulum-v1", 1, seed=0), learning_starts=50)
    restore = AgentRestore(_paid_per_step_pendulum(), 2.0)
    pend = collect_episodes(make_env("Pendulum-v1"), n_episodes=2, seed=0)
    agent.learn(120)
    restore.remember(agent, pend, 120)
    agent.learn(120)
    restore.remember(agent, pend, 240)
    live = [np.array(x) for x in jax.tree_util.tree_leaves(agent.policy.actor_state)]
    restore.save_files(tmp_path)
    back = AgentRestore(restore.net, 2.0)
    back.load_files(tmp_path, agent)
    _same_kept(restore, back)
    for x, y in zip(restore.kept, back.kept, strict=True):
        a, b = (jax.tree_util.tree_leaves(k.params["jax"]) for k in (x, y))
        assert len(a) == len(b) and all(np.array_equal(np.array(u), np.array(v)) for u, v in zip(a, b))
    now = [np.array(x) for x in jax.tree_util.tree_leaves(agent.policy.actor_state)]
    assert all(np.array_equal(u, v) for u, v in zip(live, now, strict=True))  # the live policy kept


def _paid_per_step_pendulum() -> MLPReward:
    env = make_env("Pendulum-v1")
    torch.manual_seed(0)
    return MLPReward(env.observation_space, env.action_space, hidden=(16,), ensemble_size=2)


def test_the_loop_logs_the_signal_each_iteration_and_chooses_at_the_end() -> None:
    cfg = LoopConfig(total_steps=2400, total_labels=8, iterations=4, initial_steps=200,
                     fragment_length=20, watch_restore=2.0)  # fmt: skip
    loop = build(cfg)  # SAC on Pendulum: every episode is 200 steps
    loop.run()
    rows = loop.state.history
    assert "watch/restore_gap" not in rows[0] and "watch/restore_gap" not in rows[1]  # one policy kept
    assert all("watch/restore_gap" in r for r in rows[2:])
    assert "watch/restore_gap_end" in rows[-1]
    assert loop.restore is not None and len(loop.restore.kept) == 4  # iterations 1-3 and the end
    off = build(LoopConfig(total_steps=800, total_labels=6, iterations=3, initial_steps=200,
                           fragment_length=20, watch_restore=0.0))  # fmt: skip
    assert off.restore is None


def test_the_loop_checkpoints_its_kept_policies(tmp_path) -> None:
    cfg = LoopConfig(total_steps=1800, total_labels=6, iterations=3, initial_steps=200,
                     fragment_length=20, watch_restore=2.0)  # fmt: skip
    loop = build(cfg, tmp=tmp_path)
    loop.run()
    assert loop.checkpoint is not None and loop.restore is not None
    latest = loop.checkpoint.dir.latest()
    assert latest is not None and (latest / "restore.safetensors").exists()
    back = AgentRestore(loop.restore.net, 2.0)
    back.load_files(latest, loop.agent)
    steps = [k.env_steps for k in back.kept]
    assert steps and steps == [k.env_steps for k in loop.restore.kept][: len(steps)]


def test_the_report_says_when_the_run_ended_with_an_earlier_policy() -> None:
    rows = [
        {"step": 1000.0, "watch/alarm": 0.0},
        {"step": 2000.0, "watch/alarm": 0.0, "watch/restore_gap": 3.0},  # said, not done
        {"step": 3000.0, "watch/alarm": 0.0, "watch/restored_from_end": 1000.0},
    ]
    s = summary(rows)
    assert s["restored"] == [[3000, 1000]]
    assert "the run ended with the agent's policy of step 1,000" in describe(s)
    assert "policy of step" not in summary(rows[:2])["text"]


def _one_long_episode(level: float, seed: int, steps: int = 1000) -> TrajectoryBatch:
    """One unfinished CartPole-shaped episode of ``steps`` steps whose observations sit near ``level``."""
    rng = np.random.default_rng(seed)
    obs = (level + 0.1 * rng.standard_normal((steps + 1, 4))).astype(np.float32)
    acts = rng.integers(0, 2, steps)
    return TrajectoryBatch.from_trajectories([Trajectory(obs=obs, acts=acts, truncated=True)])


def test_a_policy_whose_episodes_outlast_its_share_is_kept_with_windows() -> None:
    """Long games (Enduro): the newest steps in windows of WINDOW steps, within the bytes."""
    batch = _one_long_episode(0.0, seed=0)
    per_row = batch.obs.nbytes / len(batch.obs)
    got = windows(batch, steps=10**6, max_bytes=3.5 * (WINDOW + 1) * per_row)  # room for three
    assert got is not None and len(got) == 3 and (got.lengths == WINDOW).all()
    np.testing.assert_array_equal(got.obs[-(WINDOW + 1) :], batch.obs[-(WINDOW + 1) :])  # the newest last
    assert not got.terminated.any() and got.truncated.all()
    assert windows(batch, steps=1, max_bytes=1.5 * (WINDOW + 1) * per_row) is None  # room for one
    assert windows(_one_long_episode(0.0, seed=0, steps=WINDOW - 1)) is None  # shorter than a window
    restore = AgentRestore(_paid_per_step(), 2.0)
    restore.remember(_ppo(), batch, 1000)
    assert len(restore.kept) == 1 and restore.kept[0].windows and tail(batch) is None


def test_windows_are_compared_with_windows_only(tmp_path) -> None:
    """The trial and watch/climb work where episodes outlast the share: the policy whose windows
    the reward pays more leads; a policy kept with episodes is not compared with them."""
    net = _paid_per_step()
    low, high = (float(v) for v in net.predict(np.array([[0.0] * 4, [2.0] * 4]), np.zeros(2, int),
                                               np.array([[0.0] * 4, [2.0] * 4]))[0])  # fmt: skip
    better, worse = (2.0, 0.0) if high > low else (0.0, 2.0)
    agent = _ppo()
    restore = AgentRestore(net, 2.0)
    restore.remember(agent, _cartpole(True, seed=0), 500)  # episodes
    restore.remember(agent, _one_long_episode(worse, seed=1), 1000)  # windows from here on
    assert np.isnan(restore.newest_over(500)) and np.isnan(restore.climb())
    restore.remember(agent, _one_long_episode(better, seed=2), 2000)
    assert restore.newest_over(1000) > 2 and restore.climb() > 2 and np.isnan(restore.newest_over(500))
    alone = AgentRestore(net, 2.0)  # the same windows without the policy kept with episodes
    alone.remember(agent, _one_long_episode(worse, seed=1), 1000)
    alone.remember(agent, _one_long_episode(better, seed=2), 2000)
    assert alone.newest_over(1000) == restore.newest_over(1000)  # episodes' spread is not pooled in
    best, lead = restore.lead()
    assert best == 1 and lead < -2  # the earlier windows trail the newest
    restore.remember(agent, _one_long_episode(worse, seed=3), 3000)  # now the best earlier leads
    assert restore.lead()[1] > 3.6
    before = _state(agent)
    out = restore.choose(agent)  # the end's restore gives back only policies kept with episodes
    assert out["watch/restore_gap"] > 3.6 and "watch/restored_from" not in out
    assert all(torch.equal(v, before[k]) for k, v in _state(agent).items())
    restore.save_files(tmp_path)
    back = AgentRestore(net, 2.0)
    back.load_files(tmp_path, agent)
    assert [k.windows for k in back.kept] == [False, True, True, True]
    assert back.newest_over(2000) == restore.newest_over(2000)
