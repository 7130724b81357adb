"""The asynchronous preference wrapper: reward learning inside any RL code.

:class:`PreferenceEnv` (one Gymnasium env) and :class:`PreferenceVectorEnv` (a vector env)
record clips of what the agent does, have a teacher compare them, train a reward model and
return its reward from ``step`` — in background processes, so the agent's own loop is not
slowed down. One module per role (see docs/wrapper.md):

- :mod:`~prefrl.preference_env.wrappers`: the Gymnasium wrappers users import;
- :mod:`~prefrl.preference_env.config`: :class:`PreferenceEnvConfig`;
- :mod:`~prefrl.preference_env.env_process`: what runs in the agent's process (recording
  clips, the per-step learned reward, normalisation);
- :mod:`~prefrl.preference_env.runtime`: starts, watches and stops the background processes;
- :mod:`~prefrl.preference_env.labeller`: pairs finished clips and asks the teacher;
- :mod:`~prefrl.preference_env.trainer_process`: keeps the labels, trains, publishes weights;
- :mod:`~prefrl.preference_env.rewarder`: the optional per-step reward process;
- :mod:`~prefrl.preference_env.workers`: what the background processes share (links, stop checks);
- :mod:`~prefrl.preference_env.shared_memory` and :mod:`~prefrl.preference_env.ring`: the
  shared-memory board (weights, counters) and the clip ring.
"""

from prefrl.preference_env.config import PreferenceEnvConfig
from prefrl.preference_env.runtime import BackgroundProcessError
from prefrl.preference_env.wrappers import PreferenceEnv, PreferenceVectorEnv

__all__ = ["BackgroundProcessError", "PreferenceEnv", "PreferenceEnvConfig", "PreferenceVectorEnv"]
