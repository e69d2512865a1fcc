"""Every family of ``llmdyn.models.ARCHITECTURES``, on its tiny model in float64, against autograd.

The families are read from the records (:data:`llmdyn.models.TINY_CONFIGS`, each family's tiny
model and its variants), so a family added there is checked here with no test written by hand.
The reference is ``torch.autograd.functional.jacobian`` through the block as the model itself
runs it (its own eager attention, masks and rotary embeddings, recorded from a real forward).

Tolerances, relative to the largest entry. A route against autograd: 1e-12, float64
rounding (measured: at most 5e-16). Where transformers computes internals in float32 inside a
float64 model in a way a fast route does not repeat operation for operation
(``Architecture.float32_inside``: Gemma's RMS norms, MPT's softmax), 1e-6 (measured: 1.4e-7
on Gemma 3, whose MLP-start route forms its norm's Jacobian in float64, and 6e-10 on MPT).
Batched prompts against one at a time: 1e-6, because the eager attention of most families
takes its softmax in float32 and the padded prefix changes its summation (measured: at most
3.6e-7, OLMo-2). The logit lens against the model's logits: 1e-12 (the same operations).
"""

from __future__ import annotations

import pytest
import torch
from torch.autograd.functional import jacobian

from llmdyn import LlmdynError
from llmdyn.jacobians import block_jacobians, last_token_jacobians, last_token_jacobians_batched
from llmdyn.jacobians.blocks import block_function, capture_block_calls
from llmdyn.models.architectures import ARCHITECTURES, TINY_CONFIGS, config_value
from llmdyn.models.loading import load_model
from llmdyn.trace import encode, logit_lens, trajectory

PROMPT = "Hi, you"  # 7 byte tokens
FAMILIES = sorted(TINY_CONFIGS)


def _tolerance(model) -> float:
    return 1e-6 if model.arch.float32_inside else 1e-12


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


@pytest.fixture(scope="module", params=FAMILIES)
def tiny(request):
    return load_model(request.param, dtype=torch.float64)


def _autograd_rows(model, ids, t):
    """J^b_tt of every block b from autograd through the block's own forward: [layer, d, d]."""
    calls = capture_block_calls(model, ids)
    out = []
    for b, call in enumerate(calls):
        g, x = block_function(model, b), call.args[0].detach()  # [1, tok, d_model]

        def f(xt, g=g, x=x, call=call):
            full = torch.cat([x[:, :t], xt[None, None], x[:, t + 1:]], dim=1)
            return g(full, *call.args[1:], **call.kwargs)[0, t] - xt

        out.append(jacobian(f, x[0, t]))
    return torch.stack(out)


def test_last_token_jacobians_equal_autograd(tiny):
    ids = encode(tiny, PROMPT)
    ref = _autograd_rows(tiny, ids, ids.shape[1] - 1)
    got = last_token_jacobians(tiny, PROMPT)
    assert _rel(got, ref) < _tolerance(tiny), tiny.name


def test_diagonal_jacobians_equal_autograd(tiny):
    ids = encode(tiny, PROMPT)
    # own-position attention where the family's attention allows it, else the exact route
    got = block_jacobians(tiny, PROMPT, pairs="diagonal", progress=False)  # [layer, tok, d, d]
    for t in (0, 3):
        assert _rel(got[:, t], _autograd_rows(tiny, ids, t)) < _tolerance(tiny), (tiny.name, t)


def test_fast_route_equals_exact_route(tiny):
    fast = last_token_jacobians(tiny, PROMPT)  # frozen prefix, MLP start where the family has them
    exact = block_jacobians(tiny, PROMPT, pairs="last", method="exact", progress=False)[:, 0]
    assert _rel(fast, exact) < _tolerance(tiny), tiny.name


def test_batched_route_equals_one_prompt_at_a_time_or_refuses(tiny):
    prompts = [PROMPT, "Hello there, you"]
    if config_value(tiny.hf.config, tiny.arch.alibi):
        with pytest.raises(LlmdynError, match="prompts_per_batch=1"):
            last_token_jacobians_batched(tiny, prompts)
        return
    batched = last_token_jacobians_batched(tiny, prompts)
    for i, p in enumerate(prompts):
        assert _rel(batched[i], last_token_jacobians(tiny, p)) < 1e-6, tiny.name


def test_logit_lens_at_the_last_layer_is_the_models_own_logits(tiny):
    ids = encode(tiny, PROMPT)
    with torch.no_grad():
        own = tiny.hf(ids).logits[0]  # [tok, vocab]
    for last_point in ("final_norm", "block_output"):
        states = trajectory(tiny, PROMPT, last_point=last_point).states
        lens = logit_lens(tiny, states, last_point=last_point)[-1]
        assert _rel(lens, own) < 1e-12, (tiny.name, last_point)


def test_every_family_has_a_tiny_model_and_its_twin_loads():
    assert {c["model_type"] for c in TINY_CONFIGS.values()} == set(ARCHITECTURES)
    for name in FAMILIES:
        twin = load_model(name, untrained=True, seed=1)
        arch = twin.arch
        assert twin.identity["initializer_range"] == getattr(twin.hf.config, arch.init_field)


def test_a_models_routes_are_logged_once_and_kept_in_its_provenance(caplog):
    import logging

    from llmdyn.models import loading

    loading._ROUTES_LOGGED.discard(("tiny-gemma3", "gemma3_text"))
    with caplog.at_level(logging.INFO, logger="llmdyn.models.loading"):
        trained = load_model("tiny-gemma3")
        twin = load_model("tiny-gemma3", untrained=True)
    lines = [r.getMessage() for r in caplog.records if "Jacobian routes" in r.getMessage()]
    assert lines == ["tiny-gemma3 (gemma3_text): Jacobian routes last_token "
                     "frozen-prefix+mlp-start, diagonal own-position"]
    assert trained.identity["routes"] == twin.identity["routes"] == {
        "last_token": "frozen-prefix+mlp-start", "diagonal": "own-position"}
    assert load_model("tiny-mpt").identity["routes"] == {"last_token": "generic",
                                                         "diagonal": "exact"}


def test_the_readme_and_the_book_list_every_family():
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    rows = [line for line in readme.splitlines()
            if re.match(r"\| `[a-z0-9_]+`", line) and "`tiny-" in line]
    families = {t for row in rows for t in re.findall(r"`([a-z0-9_]+)`", row.split("|")[1])}
    tiny = {t for row in rows for t in re.findall(r"`(tiny-[a-z0-9-]+)`", row.split("|")[3])}
    assert families == set(ARCHITECTURES)
    assert tiny == set(TINY_CONFIGS)
    methods = (Path(__file__).resolve().parents[2] / "book" / "methods.md").read_text()
    listed = methods[methods.index("- **Families.**"):].split("\n\n")[0]
    assert set(re.findall(r"`([a-z0-9_]+)`", listed)) >= set(ARCHITECTURES)
