"""The logit-lens entropy per layer equals the entropy of the model's own head on the states."""

import numpy as np
import pytest
import torch

from llmdyn import metrics
from llmdyn.lens import lens_entropy
from llmdyn.store import ResultStore
from llmdyn.trace import logit_lens, trajectory
from tests.conftest import FRANCE

PROMPTS = [FRANCE, "United States of", "What month was I born in?"]


def test_lens_entropy_matches_the_logit_lens(tiny64, tmp_path):
    store = ResultStore(tiny64.model_id, root=tmp_path)
    got = lens_entropy(tiny64, PROMPTS, store)
    assert got.shape == (3, tiny64.n_layers + 1)
    tr = trajectory(tiny64, PROMPTS[2])
    want = metrics.entropy(logit_lens(tiny64, tr.states[:, -1].float()).double()).numpy()
    np.testing.assert_allclose(got[2], want, rtol=1e-5)
    with torch.no_grad():  # the last layer reads the model's real prediction
        logits = tiny64.hf(tr.input_ids[None]).logits[0, -1]
    assert got[2, -1] == pytest.approx(float(metrics.entropy(logits)), rel=1e-5)
    assert (got <= np.log(tiny64.vocab_size) + 1e-9).all() and (got >= 0).all()


def test_top_text():
    from llmdyn.lens import top_text

    assert top_text(["Paris", "the", "a", "x"], np.array([0.861, 0.02, 0.01, 0.0])) == \
        "‘Paris’ 0.86, ‘the’ 0.02, ‘a’ 0.01"


def test_readout_with_mismatched_fields_raises():
    from llmdyn import LlmdynError
    from llmdyn.lens import LensReadout

    with pytest.raises(LlmdynError, match="LensReadout fields disagree"):
        LensReadout(np.zeros(3), np.zeros((3, 2), int), np.zeros((3, 2)), np.zeros(3),
                    np.zeros(4), 1.0)
