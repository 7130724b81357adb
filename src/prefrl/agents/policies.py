"""Choose the SB3 policy class for an observation space (``--agent.policy auto``).

Example:
    >>> import numpy as np
    >>> from gymnasium import spaces
    >>> resolve_policy("auto", spaces.Box(0, 255, (4, 84, 84), np.uint8))
    'CnnPolicy'
    >>> resolve_policy("auto", spaces.Box(-1.0, 1.0, (3,)))
    'MlpPolicy'
"""

from __future__ import annotations

from gymnasium import spaces

from prefrl.rewards.spaces import channels_first, is_image_space

POLICIES = ("MlpPolicy", "CnnPolicy", "MultiInputPolicy")
MIN_CNN_SIDE = 36
"""Smallest image side SB3's ``CnnPolicy`` (Nature CNN: 8x8/4, 4x4/2, 3x3/1) accepts."""


def resolve_policy(policy: str, obs_space: spaces.Space) -> str:
    """The SB3 policy name for ``obs_space``: ``policy`` itself unless it is ``"auto"``.

    ``"auto"``: ``CnnPolicy`` for ``uint8`` images of rank 3 (HWC or CHW, frame stacks
    included; SB3 transposes channel-last images itself) at least :data:`MIN_CNN_SIDE`
    pixels high and wide (SB3's Nature CNN needs that much), ``MultiInputPolicy`` for
    ``Dict`` spaces, ``MlpPolicy`` otherwise (smaller images included).
    """
    if policy != "auto":
        if policy not in POLICIES:
            raise ValueError(f"unknown SB3 policy {policy!r}; choose 'auto' or one of {list(POLICIES)}")
        return policy
    if isinstance(obs_space, spaces.Dict):
        return "MultiInputPolicy"
    if is_image_space(obs_space):
        shape = obs_space.shape
        assert shape is not None
        h, w = shape[1:] if channels_first(shape) else shape[:2]
        if min(h, w) >= MIN_CNN_SIDE:
            return "CnnPolicy"
    return "MlpPolicy"
