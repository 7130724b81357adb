import numpy as np
import pytest
import torch
from gymnasium import spaces

from prefrl.data import sample_fragments
from prefrl.rewards import MLPReward
from prefrl.selection import DisagreementSelector, UniformSelector, disagreement, ensemble_logits
from tests.conftest import make_batch

OBS, ACT = spaces.Box(-10, 10, (3,)), spaces.Box(-2, 2, (1,))


def test_measures_match_hand_computation():
    logits = torch.tensor([[1.0, 0.0, -2.0], [3.0, 0.0, 2.0]])  # [E=2, m=3]
    np.testing.assert_allclose(disagreement(logits, "logit").numpy(), [1.0, 0.0, 4.0])
    p = torch.sigmoid(logits)
    np.testing.assert_allclose(disagreement(logits, "probability").numpy(), p.var(0, unbiased=False).numpy())
    np.testing.assert_allclose(disagreement(logits, "label").numpy(), [0.0, 0.0, 0.25])
    pm = p.mean(0)
    ent = -(pm * pm.log() + (1 - pm) * (1 - pm).log())
    np.testing.assert_allclose(disagreement(logits, "entropy").numpy(), ent.numpy(), rtol=1e-5)


def test_probability_measure_prefers_contested_order_over_large_return_gaps():
    # pair 0: members agree clip 0 is far better, but on how much (logits 20 vs 40, as when a
    # clip runs into a long absorbing tail); pair 1: members disagree on which clip is better
    logits = torch.tensor([[20.0, 1.0], [40.0, -1.0]])  # [E=2, m=2]
    by_logit = disagreement(logits, "logit").numpy()
    by_prob = disagreement(logits, "probability").numpy()
    assert by_logit[0] > by_logit[1]  # the logit variance chases the size of the gap
    assert by_prob[1] > by_prob[0]  # the probability variance chases disagreement on the order
    assert by_prob.max() <= 0.25  # bounded: one outlier pair cannot dominate every query


def test_ensemble_logits_equal_per_pair_computation():
    f, _ = sample_fragments(make_batch([40, 40]), 30, 5, np.random.default_rng(0))
    net = MLPReward(OBS, ACT, ensemble_size=3)
    pairs = np.random.default_rng(1).integers(0, 30, (50, 2))
    got = ensemble_logits(net, f, pairs)
    a = f.arrays(pairs)
    r = net(*(torch.as_tensor(x) for x in (a.obs, a.acts, a.next_obs, a.dones)))  # [E, 50, 2, L]
    torch.testing.assert_close(got, r.sum(-1)[..., 0] - r.sum(-1)[..., 1])


def test_disagreement_selector_picks_the_most_contested_pairs():
    f, _ = sample_fragments(make_batch([60, 60]), 40, 5, np.random.default_rng(0))
    net = MLPReward(OBS, ACT, ensemble_size=5)
    cands = np.random.default_rng(2).integers(0, 40, (200, 2))
    sel = DisagreementSelector(net, "logit")
    chosen = sel.select(f, cands, 20)
    scores = sel.scores(f, cands)
    assert len(set(chosen.tolist())) == 20
    assert scores[chosen].min() >= np.sort(scores)[-20] - 1e-6


def test_uniform_selector_and_errors():
    f, _ = sample_fragments(make_batch([30]), 10, 5, np.random.default_rng(0))
    cands = np.arange(20).reshape(10, 2) % 10
    idx = UniformSelector(np.random.default_rng(0)).select(f, cands, 4)
    assert len(np.unique(idx)) == 4
    with pytest.raises(ValueError, match="cannot select 11 of 10"):
        UniformSelector().select(f, cands, 11)
    with pytest.raises(ValueError, match="needs an ensemble"):
        DisagreementSelector(MLPReward(OBS, ACT), "logit")
    with pytest.raises(ValueError, match="unknown uncertainty measure"):
        DisagreementSelector(MLPReward(OBS, ACT, ensemble_size=2), "variance")  # type: ignore[arg-type]


def test_mixed_selection_takes_a_share_by_disagreement_and_the_rest_at_random():
    sel = DisagreementSelector.__new__(DisagreementSelector)  # only the choosing, no network
    sel.rng = np.random.default_rng(0)
    s = np.arange(20, dtype=np.float64)  # candidate 19 is the most contested
    np.testing.assert_array_equal(sel.mixed(s, 4, 1.0), [16, 17, 18, 19])
    tops, rest = [], set()
    for _ in range(200):
        got = sel.mixed(s, 4, 0.5)
        assert len(got) == 4 and len(set(got.tolist())) == 4 and np.all(np.diff(got) > 0)
        assert {18, 19} <= set(got.tolist())  # the two top-scored of four
        rest |= set(got.tolist()) - {18, 19}
    assert len(rest) > 10  # the other half is spread over the candidates
    for _ in range(400):  # 3 queries at share 0.5: one or two by disagreement, 1.5 on average
        got = sel.mixed(s, 3, 0.5)
        tops.append(int(19 in got) + int(18 in got and 19 in got))
    assert 1.3 < np.mean(tops) < 1.8
    assert len(sel.mixed(s, 3, 0.0)) == 3
    with pytest.raises(ValueError, match="share"):
        sel.mixed(s, 3, 1.5)
