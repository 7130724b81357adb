"""Trajectories, fragments and preference datasets (NumPy only, no RL dependencies)."""

from prefrl.data.dataset import AddReport, PreferenceDataset, validate_labels
from prefrl.data.fragments import (
    FragmentArrays,
    Fragments,
    SampleReport,
    distinct_pairs,
    random_pairs,
    sample_fragments,
)
from prefrl.data.trajectories import Trajectory, TrajectoryBatch

__all__ = [
    "AddReport",
    "FragmentArrays",
    "Fragments",
    "PreferenceDataset",
    "SampleReport",
    "Trajectory",
    "TrajectoryBatch",
    "distinct_pairs",
    "random_pairs",
    "sample_fragments",
    "validate_labels",
]
