import math

import numpy as np
import pytest
import torch

from prefrl.preference import (
    fragment_returns,
    preference_logits,
    preference_loss,
    preference_metrics,
    preference_probs,
)


def test_logits_are_differences_of_discounted_returns():
    rews = torch.tensor([[[1.0, 2.0, 3.0], [0.0, 0.0, 1.0]]])  # [1, 2, 3]
    assert preference_logits(rews).item() == pytest.approx(5.0)
    assert preference_logits(rews, 0.5).item() == pytest.approx((1 + 1 + 0.75) - 0.25)
    assert fragment_returns(rews, 0.5)[0, 0].item() == pytest.approx(2.75)
    with pytest.raises(ValueError, match=r"\[\.\.\., 2, L\]"):
        preference_logits(torch.zeros(3, 4))


def test_loss_matches_hand_computation_with_error_rate():
    z = torch.tensor([2.0, -1.0, 0.0])
    y = torch.tensor([1.0, 0.5, 0.0])
    eps = 0.1
    p = [eps / 2 + (1 - eps) / (1 + math.exp(-v)) for v in (2.0, -1.0, 0.0)]
    expected = [-math.log(p[0]), -(0.5 * math.log(p[1]) + 0.5 * math.log(1 - p[1])), -math.log(1 - p[2])]
    got = preference_loss(z, y, eps, reduction="none")
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5)
    np.testing.assert_allclose(preference_probs(z, eps).numpy(), p, rtol=1e-6)
    # ε = 0 reduces to BCE with logits
    bce = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
    torch.testing.assert_close(preference_loss(z, y), bce)


def test_error_rate_really_shapes_the_gradient():
    # A confidently wrong prediction: without ε the gradient keeps pushing; with ε it saturates
    z = torch.tensor([-20.0], requires_grad=True)
    y = torch.ones(1)
    (g0,) = torch.autograd.grad(preference_loss(z, y, 0.0), z)
    (g1,) = torch.autograd.grad(preference_loss(z, y, 0.1), z)
    assert g0.item() == pytest.approx(-1.0, abs=1e-6)
    assert abs(g1.item()) < 1e-6
    # and the loss stays finite even at huge logits
    assert torch.isfinite(preference_loss(torch.tensor([1e4]), torch.zeros(1), 0.1))
    assert preference_loss(torch.tensor([1e4]), torch.zeros(1), 0.1).item() == pytest.approx(-math.log(0.05))


def test_metrics_report_accuracy_without_ties_and_ties_separately():
    z = torch.tensor([3.0, -2.0, 1.0, 0.0])
    y = torch.tensor([1.0, 1.0, 0.5, 0.5])
    m = preference_metrics(z, y)
    assert m["accuracy"] == pytest.approx(0.5)
    assert m["tie_fraction"] == pytest.approx(0.5)
    assert m["tie_abs_error"] == pytest.approx((abs(1 / (1 + math.exp(-1)) - 0.5) + 0) / 2, rel=1e-5)
