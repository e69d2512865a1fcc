"""Chapter 08's measurement passes every setting on: spies on the calls, no model runs."""

from types import SimpleNamespace

import pytest
import torch

from llmdyn import LlmdynError
from llmdyn.emergence import profiles


class Reached(Exception):
    """Raised by a spy once it has recorded its call."""


@pytest.mark.parametrize("last_point", ["final_norm", "block_output"])
def test_last_point_and_k_reach_the_coupling_and_window_the_trajectories(monkeypatch, last_point):
    # measure_checkpoint called depth_coupling without last_point, so the coupling's
    # last block always included the final norm whatever the chapter asked for.
    seen = {}

    def coupling(model, prompts, *, k, store, last_point):
        seen["coupling"] = (list(prompts), k, store, last_point)
        return []

    def trajectory_scores(model, prompt, window, last_point):
        seen["trajectories"] = (prompt, window, last_point)
        raise Reached

    monkeypatch.setattr(profiles, "depth_coupling", coupling)
    monkeypatch.setattr(profiles, "_trajectory_scores", trajectory_scores)
    model = SimpleNamespace(n_layers=6)
    with pytest.raises(Reached):
        profiles.measure_checkpoint(model, ["a text"], k=5, window=5, last_point=last_point)
    assert seen == {"coupling": (["a text"], 5, None, last_point),
                    "trajectories": ("a text", 5, last_point)}
    with pytest.raises(LlmdynError, match="last_point must be 'final_norm'"):
        profiles.measure_checkpoint(model, ["a text"], k=5, last_point="normed")


def test_every_checkpoint_is_measured_with_the_same_settings(monkeypatch):
    calls = []
    monkeypatch.setattr(profiles, "load_model", lambda spec, device: SimpleNamespace(
        model_id=spec, identity={"name": spec}, device=device, hf=torch.nn.Linear(1, 1)))
    monkeypatch.setattr(profiles, "ResultStore", lambda model_id, provenance: ("store", model_id))
    monkeypatch.setattr(profiles, "measure_checkpoint", lambda model, prompts, **kw: calls.append(
        (model.model_id, model.device, prompts, kw)))
    ckpts = [SimpleNamespace(spec="run/step0"), SimpleNamespace(spec="run/step8")]
    profiles.measure_checkpoints(ckpts, ["t"], k=7, window=5, last_point="block_output",
                                 device="meta", progress=False)
    assert calls == [(c.spec, "meta", ["t"], {"k": 7, "window": 5, "last_point": "block_output",
                                              "store": ("store", c.spec)}) for c in ckpts]
