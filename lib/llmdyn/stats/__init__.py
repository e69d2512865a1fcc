"""Regressions, correlations, intervals and their coverage, PCA, and per-unit summaries.

May import: ``core``.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["anova", "bootstrap", "cluster", "coverage", "intervals", "pca", "power",
                "regression", "replicates", "unit_values"],
    submod_attrs={
        "anova": ["ALPHA", "OneWayAnova", "one_way_anova", "cell_summary", "min_detectable_ratio"],
        "bootstrap": ["N_RESAMPLES", "LEVEL", "MIN_ITEMS", "Statistic", "Estimate", "exact", "bca",
                      "bootstrap_rows", "mean", "median", "ratio_of_means", "difference_of_means",
                      "slope", "r2", "signed_r2", "difference_of_medians", "relative_iqr",
                      "fraction_true", "geometric_mean_ratio", "variance_ratio",
                      "correlation_difference"],
        "cluster": ["cluster_bootstrap"],
        "coverage": ["KINDS", "SIZES", "METHODS", "choose"],
        "intervals": ["t_mean", "t_difference", "delta_t", "ols_t", "fisher_z", "clopper_pearson",
                      "order_median", "bonferroni_level", "log_t", "pitman_morgan",
                      "pitman_morgan_hc4", "zou"],
        "pca": ["pca_projection"],
        "power": ["min_detectable_r2", "power_sentence", "RulePower", "rule_power", "linear_draw",
                  "f_test_judge"],
        "regression": ["LinearFit", "ols", "ols_or_none", "ExponentialFit", "exponential_fit",
                       "Correlation", "pearson", "spearman", "PairedDifference",
                       "paired_difference", "PartialFit", "partial_regression"],
        "replicates": ["within_cell_draws", "bootstrap_within_cells"],
        "unit_values": ["per_unit", "per_unit_groups"],
    },
)
