"""agent_reset_at: the agent restarts once from fresh weights part-way, keeping what it must."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import numpy as np
import pytest
import torch

from prefrl.agents.policy_io import load_agent
from prefrl.training.agent_step import SOFT_KEEP
from prefrl.training.callbacks import LoopCallback
from prefrl.training.config import IMAGE_RESET_AT, LoopConfig, resolve_agent_reset
from prefrl.training.watch import summary
from tests.training.test_loop import build


def _weights(agent) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in agent.policy.state_dict().items()}


def _moved(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor]) -> bool:
    return any(not torch.equal(before[k], after[k]) for k in before)


def test_reset_iteration_is_the_share_of_the_iterations() -> None:
    cfg = LoopConfig(iterations=14)
    assert cfg.reset_iteration is None  # auto, undecided until the loop knows its agent
    assert dataclasses.replace(cfg, agent_reset_at=0.0).reset_iteration is None  # 0: never
    assert dataclasses.replace(cfg, agent_reset_at=0.5).reset_iteration == 7
    assert dataclasses.replace(cfg, agent_reset_at=0.25).reset_iteration == 4  # round(3.5)
    assert dataclasses.replace(cfg, agent_reset_at=0.01).reset_iteration == 1  # never before any learning
    for bad in (1.0, -0.2, 1.5):
        with pytest.raises(ValueError, match="agent_reset_at"):
            LoopConfig(agent_reset_at=bad)


@pytest.mark.parametrize("algo", ["ppo", "sac"])
def test_reset_gives_fresh_weights_and_keeps_steps_and_replay(algo: str) -> None:
    """The policy's weights change to new ones (not its first ones again), the step counter goes
    on, and an off-policy agent keeps its replay buffer (the same transitions)."""
    env_id = "CartPole-v1" if algo == "ppo" else "Pendulum-v1"
    cfg = LoopConfig(total_steps=400, total_labels=4, iterations=2, initial_steps=100, fragment_length=10)
    loop = build(cfg, algo=algo, env_id=env_id)
    first = _weights(loop.agent)
    loop.agent_step.learn(192)  # whole PPO rollouts (n_steps 64)
    trained, steps = _weights(loop.agent), loop.agent.num_timesteps
    buffer = loop.agent.replay_buffer if algo == "sac" else None
    kept = None if buffer is None else buffer.observations[: buffer.pos].copy()
    loop.agent_step.reset(seed=123)
    fresh = _weights(loop.agent)
    assert _moved(trained, fresh) and _moved(first, fresh)
    assert loop.agent.num_timesteps == steps
    if buffer is not None:
        assert loop.agent.replay_buffer is buffer
        np.testing.assert_array_equal(buffer.observations[: buffer.pos], kept)
    loop.agent_step.learn(128)  # and it trains on from there
    assert loop.agent.num_timesteps == steps + 128 and _moved(fresh, _weights(loop.agent))


def test_loop_resets_once_at_its_iteration() -> None:
    """A run with agent_reset_at restarts its agent before the agent steps of exactly one
    iteration, logged as agent/reset and said in the report; a run without it does not; the
    same seed draws the same fresh weights."""
    cfg = LoopConfig(total_steps=600, total_labels=6, iterations=3, initial_steps=100, fragment_length=10)
    loop = build(dataclasses.replace(cfg, agent_reset_at=0.5), algo="ppo", env_id="CartPole-v1")
    loop.run()
    assert [h.get("iteration") for h in loop.state.history if h.get("agent/reset")] == [2]  # round(0.5 x 3)
    line = summary(loop.state.history)
    assert line["reset"] == [int(loop.state.history[2]["step"])]
    assert f"restarted at step {line['reset'][0]:,}" in line["text"]  # the report says so
    off = build(cfg, algo="ppo", env_id="CartPole-v1")  # off by default
    off.run()
    assert not any(h.get("agent/reset") for h in off.state.history)
    assert "restarted" not in summary(off.state.history)["text"]
    a, b = (build(cfg, algo="ppo", env_id="CartPole-v1") for _ in range(2))
    a.agent_step.reset(seed=7)
    b.agent_step.reset(seed=7)
    assert not _moved(_weights(a.agent), _weights(b.agent))


def test_a_climbing_agent_is_spared_the_restart_and_a_stuck_one_is_not() -> None:
    """agent_reset_standing: at the restart's iteration an agent whose watch/standing reaches
    the bar keeps its policy (agent/reset_spared, said in the report); below the bar it restarts
    as without one. The standing is the one logged that iteration, before the reward's fit."""
    cfg = LoopConfig(total_steps=600, total_labels=6, iterations=3, initial_steps=100, fragment_length=10,
                     agent_reset_at=0.5)  # fmt: skip
    runs = {}
    for bar in (-1e6, 1e6):  # every standing climbs / none does
        loop = build(dataclasses.replace(cfg, agent_reset_standing=bar), algo="ppo", env_id="CartPole-v1")
        loop.run()
        runs[bar] = loop.state.history
    spared, restarted = runs[-1e6], runs[1e6]
    assert "watch/standing" in spared[2]  # measured at the restart's iteration, round(0.5 x 3)
    assert [h["iteration"] for h in spared if h.get("agent/reset_spared")] == [2]
    assert not any(h.get("agent/reset") for h in spared)
    assert [h["iteration"] for h in restarted if h.get("agent/reset")] == [2]
    assert not any(h.get("agent/reset_spared") for h in restarted)
    line = summary(spared)
    assert line["reset_spared"] == [[int(spared[2]["step"]), spared[2]["watch/standing"]]]
    assert "kept its policy" in line["text"] and "restarted" not in line["text"]
    assert "kept its policy" not in summary(restarted)["text"]


def test_the_standing_bar_is_validated() -> None:
    assert LoopConfig(agent_reset_at=0.5, agent_reset_standing=1.5).agent_reset_standing == 1.5
    auto = LoopConfig(agent_reset_standing=1.5)  # the automatic restart: kept on images, moot elsewhere
    assert resolve_agent_reset(auto, images=True).agent_reset_standing == 1.5
    assert resolve_agent_reset(auto, images=False).agent_reset_standing is None
    for at, bar in ((0.0, 1.5), (0.5, float("nan"))):  # no restart to spare; no bar
        with pytest.raises(ValueError, match="agent_reset_standing"):
            LoopConfig(agent_reset_at=at, agent_reset_standing=bar)


def test_reset_trial_gives_the_replaced_policy_back_where_the_fresh_one_is_paid_less() -> None:
    """agent_reset_trial: the trial's iteration compares the fresh agent with the policy it
    replaced under the reward as it stands; paid less, the replaced policy's weights come back
    (the very ones kept at the restart); the report says which way it went."""
    cfg = LoopConfig(total_steps=800, total_labels=6, iterations=4, initial_steps=100, fragment_length=10,
                     agent_reset_at=0.5, agent_reset_trial=1, watch_restore=0.0)  # fmt: skip
    loop = build(cfg, algo="ppo", env_id="CartPole-v1")
    undone: dict[str, torch.Tensor] = {}
    original = loop.restore.give_back

    def spy(agent, env_steps: int) -> None:  # record what comes back, then let it happen
        original(agent, env_steps)
        undone.update(_weights(agent))
        assert [s.env_steps for s in loop.restore.kept].count(env_steps) == 1

    loop.restore.give_back = spy
    loop.run()
    rows = loop.state.history
    assert [h["iteration"] for h in rows if h.get("agent/reset")] == [2]
    trial = [h for h in rows if "agent/reset_trial" in h]
    assert [h["iteration"] for h in trial] == [3] and np.isfinite(trial[0]["agent/reset_trial"])
    line = summary(rows)
    lead = trial[0]["agent/reset_trial"]
    assert line["reset_trial"] == [[int(trial[0]["step"]), lead, float(lead < 0)]]
    if lead < 0:
        replaced = next(s for s in loop.restore.kept if s.env_steps == rows[2]["agent/reset_from"])
        assert all(torch.equal(undone[k], v) for k, v in replaced.params.items())
        assert "which came back" in line["text"]
    else:
        assert not undone and "which stayed replaced" in line["text"]


def test_reset_trial_decides_by_the_sign_of_the_fresh_agents_lead(monkeypatch) -> None:
    """Both ways: a fresh agent paid less gets the replaced policy's weights back, one paid more
    keeps its own."""
    from prefrl.training.restore import AgentRestore

    cfg = LoopConfig(total_steps=800, total_labels=6, iterations=4, initial_steps=100, fragment_length=10,
                     agent_reset_at=0.5, agent_reset_trial=1)  # fmt: skip
    for lead, back in ((-3.0, True), (3.0, False)):
        monkeypatch.setattr(AgentRestore, "newest_over", lambda self, steps, lead=lead: lead)
        loop = build(cfg, algo="ppo", env_id="CartPole-v1")
        loop.run()
        row = next(h for h in loop.state.history if "agent/reset_trial" in h)
        assert row["agent/reset_trial"] == lead and bool(row.get("agent/reset_undone")) == back


def test_reset_trial_is_validated() -> None:
    assert LoopConfig(iterations=14, agent_reset_at=0.5, agent_reset_trial=2).reset_trial_iteration == 9
    assert LoopConfig(iterations=14, agent_reset_at=0.8, agent_reset_trial=3).reset_trial_iteration == 13
    assert LoopConfig(iterations=14, agent_reset_at=0.9, agent_reset_trial=2).reset_trial_iteration is None
    assert LoopConfig(iterations=2, agent_reset_at=0.5, agent_reset_trial=2).reset_trial_iteration is None
    assert LoopConfig(iterations=14, agent_reset_at=0.5).reset_trial_iteration is None
    for at, trial in ((None, 2), (0.5, 0), (0.5, 7)):
        with pytest.raises(ValueError, match="agent_reset_trial"):
            LoopConfig(iterations=14, agent_reset_at=at, agent_reset_trial=trial)


class _StopAfter(LoopCallback):
    """Stops the loop once ``n`` iterations are done (after their checkpoint), as a kill would."""

    def __init__(self, n: int) -> None:
        self.n = n

    def on_iteration_end(self, loop, metrics) -> bool | None:
        return False if loop.progress.iteration >= self.n else None


def test_a_run_stopped_during_the_trial_resumes_and_decides_it(tmp_path) -> None:
    """Stopped between the restart and its trial, a resumed run still holds the replaced
    policy's very weights (from the checkpoint) and decides the trial at its iteration."""
    cfg = LoopConfig(total_steps=800, total_labels=6, iterations=4, initial_steps=100, fragment_length=10,
                     agent_reset_at=0.5, agent_reset_trial=1, checkpoint_interval=1)  # fmt: skip
    first = build(cfg, algo="ppo", env_id="CartPole-v1", tmp=tmp_path / "run")
    first.callbacks = [_StopAfter(3)]  # iterations 0-2 done: restarted at 2, the trial due at 3
    first.run()
    assert first.progress.iteration == 3 and any(h.get("agent/reset") for h in first.state.history)
    again = build(cfg, algo="ppo", env_id="CartPole-v1", tmp=tmp_path / "run")
    venv = again.agent.get_env()
    assert again.load_checkpoint(lambda path: load_agent("ppo", path, venv))
    replaced = next(h["agent/reset_from"] for h in again.state.history if "agent/reset_from" in h)
    assert again.restore is not None and first.restore is not None
    (copy,) = [s for s in again.restore.kept if s.env_steps == replaced]
    (kept,) = [s for s in first.restore.kept if s.env_steps == replaced]
    assert all(torch.equal(copy.params[k], v) for k, v in kept.params.items())  # the very weights
    again.run()
    trial = [h for h in again.state.history if "agent/reset_trial" in h]
    assert [h["iteration"] for h in trial] == [3] and np.isfinite(trial[0]["agent/reset_trial"])


@pytest.mark.parametrize("algo", ["ppo", "sac"])
def test_each_iteration_logs_how_much_an_on_policy_agent_still_samples(algo: str) -> None:
    """agent/entropy: PPO's action entropy after its update, between 0 (one action) and ln 2
    (CartPole's two actions uniform), lower after training hard on one reward; SAC logs none."""
    env_id = "CartPole-v1" if algo == "ppo" else "Pendulum-v1"
    cfg = LoopConfig(total_steps=400, total_labels=4, iterations=2, initial_steps=100, fragment_length=10)
    loop = build(cfg, algo=algo, env_id=env_id)
    loop.run()
    logged = [h.get("agent/entropy") for h in loop.state.history]
    if algo == "sac":
        assert logged == [None, None]
        return
    assert all(e is not None and 0.0 < e <= np.log(2) + 1e-6 for e in logged)
    loop.agent.ent_coef, loop.agent.learning_rate = 0.0, 0.01  # then train greedily for a while
    loop.agent.lr_schedule = lambda _: 0.01
    loop.agent_step.learn(64 * 40)
    assert loop.agent_step.stats()["agent/entropy"] < logged[-1]


def _narrowed_loop(layers: str) -> Any:
    """A CartPole PPO loop whose restart redraws ``layers``, trained greedily at a high learning
    rate until its policy has narrowed (what a restart is for)."""
    cfg = LoopConfig(total_steps=400, total_labels=4, iterations=2, initial_steps=100, fragment_length=10,
                     agent_reset_at=0.5, agent_reset_layers=cast(Any, layers))  # fmt: skip
    loop = build(cfg, algo="ppo", env_id="CartPole-v1")
    loop.agent.ent_coef, loop.agent.learning_rate = 0.0, 0.01  # narrow the policy
    loop.agent.lr_schedule = lambda _: 0.01
    loop.agent_step.learn(64 * 30)
    return loop


def test_heads_reset_redraws_the_last_layers_only_and_the_policy_samples_again() -> None:
    """agent_reset_layers=heads: after training hard, the action and value heads get new
    weights and the layers that read the observation keep theirs; the policy samples near
    uniformly again and its optimiser starts afresh; the same seed draws the same heads."""
    loop = _narrowed_loop("heads")
    cfg = loop.config
    narrowed = loop.agent_step.stats()["agent/entropy"]
    trained = _weights(loop.agent)
    assert loop.agent.policy.optimizer.state  # Adam's moments of the training
    loop.agent_step.reset(seed=5, layers="heads")
    fresh = _weights(loop.agent)
    heads = {k for k in trained if k.startswith(("action_net.", "value_net."))}
    assert heads and all(not torch.equal(trained[k], fresh[k]) for k in heads)
    assert all(torch.equal(trained[k], fresh[k]) for k in trained if k not in heads)
    assert not loop.agent.policy.optimizer.state
    obs = torch.as_tensor(np.random.default_rng(0).normal(size=(256, 4)), dtype=torch.float32)
    with torch.no_grad():
        entropy = loop.agent.policy.get_distribution(obs).entropy().mean().item()
    assert entropy > 0.99 * np.log(2) and entropy > narrowed
    again = build(cfg, algo="ppo", env_id="CartPole-v1")
    again.agent.policy.load_state_dict(trained)
    again.agent_step.reset(seed=5, layers="heads")
    assert not _moved(fresh, _weights(again.agent))
    loop.agent_step.learn(128)  # and it trains on from there
    assert _moved(fresh, _weights(loop.agent))


@pytest.mark.parametrize("layers", ["action", "value"])
def test_one_head_reset_redraws_that_head_only(layers: str) -> None:
    """agent_reset_layers=action (value): only that head gets new weights, the same ones the
    seed draws every time, and the optimiser starts afresh; the other head and the layers that
    read the observation keep what they learned."""
    cfg = LoopConfig(total_steps=400, total_labels=4, iterations=2, initial_steps=100, fragment_length=10,
                     agent_reset_at=0.5, agent_reset_layers=cast(Any, layers))  # fmt: skip
    loop = build(cfg, algo="ppo", env_id="CartPole-v1")
    loop.agent.learning_rate = 0.01
    loop.agent.lr_schedule = lambda _: 0.01
    loop.agent_step.learn(64 * 10)
    trained = _weights(loop.agent)
    assert loop.agent.policy.optimizer.state
    loop.agent_step.reset(seed=5, layers=cast(Any, layers))
    fresh = _weights(loop.agent)
    changed = {k for k in trained if not torch.equal(trained[k], fresh[k])}
    assert changed == {f"{layers}_net.weight", f"{layers}_net.bias"}
    assert not loop.agent.policy.optimizer.state
    again = build(cfg, algo="ppo", env_id="CartPole-v1")
    again.agent.policy.load_state_dict(trained)
    again.agent_step.reset(seed=5, layers=cast(Any, layers))
    assert not _moved(fresh, _weights(again.agent))


def test_soft_reset_flattens_the_action_head_and_redraws_the_value_head() -> None:
    """agent_reset_layers=soft: the value head gets new weights, the action head keeps its own
    scaled by SOFT_KEEP (the policy samples near uniformly again, preferring what it preferred),
    the layers that read the observation keep theirs, and the optimiser starts afresh."""
    loop = _narrowed_loop("soft")
    obs = torch.as_tensor(np.random.default_rng(0).normal(size=(256, 4)), dtype=torch.float32)
    with torch.no_grad():
        before = loop.agent.policy.get_distribution(obs).distribution.probs
    trained = _weights(loop.agent)
    loop.agent_step.reset(seed=5, layers="soft")
    soft = _weights(loop.agent)
    changed = {k for k in trained if not torch.equal(trained[k], soft[k])}
    assert changed == {"action_net.weight", "action_net.bias", "value_net.weight", "value_net.bias"}
    for k in ("action_net.weight", "action_net.bias"):
        assert torch.allclose(soft[k], SOFT_KEEP * trained[k])
    assert not loop.agent.policy.optimizer.state
    with torch.no_grad():
        after = loop.agent.policy.get_distribution(obs).distribution.probs
    entropy = -(after * after.log()).sum(-1).mean().item()
    narrowed = -(before * before.log()).sum(-1).mean().item()
    assert entropy > 0.9 * np.log(2) and entropy > narrowed + 0.1, (narrowed, entropy)
    decided = (before[:, 0] - 0.5).abs() > 0.1  # the order of its preferences stays
    assert decided.any()
    assert torch.equal((after[decided, 0] > 0.5), (before[decided, 0] > 0.5))


def test_heads_reset_is_validated() -> None:
    """heads needs the restart it qualifies, an on-policy agent, and a known name; an off-policy
    agent fails when the loop is built, not at the restart mid-run."""
    for at in (None, 0.0):  # the automatic restart's layers are soft; 0 asks for none
        with pytest.raises(ValueError, match="needs agent_reset_at"):
            LoopConfig(agent_reset_at=at, agent_reset_layers="heads")
    with pytest.raises(ValueError, match="agent_reset_trial"):
        LoopConfig(iterations=14, agent_reset_at=0.0, agent_reset_trial=2)
    with pytest.raises(ValueError, match="unknown agent_reset_layers"):
        LoopConfig(agent_reset_at=0.5, agent_reset_layers=cast(Any, "trunk"))
    cfg = LoopConfig(total_steps=400, total_labels=4, iterations=2, initial_steps=100, fragment_length=10,
                     agent_reset_at=0.5, agent_reset_layers="heads")  # fmt: skip
    with pytest.raises(ValueError, match="on-policy agents"):
        build(cfg, algo="sac", env_id="Pendulum-v1")


def test_loop_resets_the_heads_at_its_iteration() -> None:
    """A run with agent_reset_layers=heads restarts its heads once, logged as agent/reset, and
    keeps the layers before them as they were trained up to then."""
    cfg = LoopConfig(total_steps=600, total_labels=6, iterations=3, initial_steps=100, fragment_length=10,
                     agent_reset_at=0.5, agent_reset_layers="heads")  # fmt: skip
    loop = build(cfg, algo="ppo", env_id="CartPole-v1")
    before, after = _restart_of(loop)
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed == {"action_net.weight", "action_net.bias", "value_net.weight", "value_net.bias"}


Weights = dict[str, torch.Tensor]


def _restart_of(loop) -> tuple[Weights, Weights]:
    """Run ``loop`` to its end; the policy's weights just before and after its one restart, which
    must come before iteration 2's agent steps (logged as agent/reset there)."""
    seen: list[tuple[Weights, Weights]] = []
    original = loop.agent_step.reset

    def spy(seed: int, layers: str = "all") -> None:  # the weights around the restart
        before = _weights(loop.agent)
        original(seed, cast(Any, layers))
        seen.append((before, _weights(loop.agent)))

    loop.agent_step.reset = spy
    loop.run()
    assert [h.get("iteration") for h in loop.state.history if h.get("agent/reset")] == [2]
    (pair,) = seen
    return pair


def test_auto_restart_is_soft_half_way_on_images_and_off_elsewhere() -> None:
    """agent_reset_at None (auto): a soft restart at IMAGE_RESET_AT for an on-policy agent on a
    learned reward of images, none elsewhere; a given restart redraws every weight unless its
    layers are named, and 0 asks for none anywhere."""
    cfg = LoopConfig(iterations=14)
    on, off = resolve_agent_reset(cfg, images=True), resolve_agent_reset(cfg, images=False)
    assert (on.agent_reset_at, on.agent_reset_layers, on.reset_iteration) == (IMAGE_RESET_AT, "soft", 7)
    assert (off.agent_reset_at, off.agent_reset_layers, off.reset_iteration) == (0.0, None, None)
    given = dataclasses.replace(cfg, agent_reset_at=0.25)
    assert resolve_agent_reset(given, images=True).agent_reset_layers == "all"
    named = dataclasses.replace(given, agent_reset_layers="heads")
    assert resolve_agent_reset(named, images=True) is named
    never = dataclasses.replace(cfg, agent_reset_at=0.0)
    assert resolve_agent_reset(never, images=True).reset_iteration is None


def test_loop_on_images_restarts_softly_half_way_by_default() -> None:
    """A PPO run on the moving dot's frames at the defaults restarts once, half-way, softly (the
    value head redrawn, the action head scaled by SOFT_KEEP, the convolutions kept), logged as
    agent/reset; the same run on CartPole's state vectors never restarts."""
    cfg = LoopConfig(total_steps=600, total_labels=6, iterations=4, initial_steps=100, fragment_length=10)
    loop = build(cfg, algo="ppo", env_id="prefrl/MovingDot-v0")
    assert (loop.config.agent_reset_at, loop.config.agent_reset_layers) == (IMAGE_RESET_AT, "soft")
    before, after = _restart_of(loop)
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed == {"action_net.weight", "action_net.bias", "value_net.weight", "value_net.bias"}
    assert torch.allclose(after["action_net.weight"], SOFT_KEEP * before["action_net.weight"])
    states = build(cfg, algo="ppo", env_id="CartPole-v1")
    assert states.config.reset_iteration is None
    states.run()
    assert not any(h.get("agent/reset") for h in states.state.history)
