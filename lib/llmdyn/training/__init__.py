"""The Pythia-style training suite: corpus, BPE, the resumable loop, checkpoints, emergence.

May import: ``sweep``, ``phases``, ``coupling`` and everything below them.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["baselines", "checkpoints", "corpus", "emergence", "generalization", "lm_task",
                "loop", "population", "schedule", "suite", "summary"],
    submod_attrs={
        "baselines": ["DEV_FRACTION", "CountModels", "fit_counts", "choose_weight",
                      "cross_entropies", "reference_losses"],
        "checkpoints": ["PYTHIA_TOKENS_PER_STEP", "Checkpoint", "suite_checkpoints", "by_run"],
        "corpus": ["EOS", "NpmSource", "NPM_SOURCES", "NPM_NAMES", "Document", "Split",
                   "npm_dir", "fetch_npm", "load_documents", "split_documents", "corpus_digest",
                   "train_tokenizer",
                   "token_stream", "text_snippets"],
        "emergence": ["CheckpointProfile", "measure_checkpoint", "measure_checkpoints",
                      "half_rise_step", "RunSeries", "run_series", "spread_steps", "depths_at",
                      "measure_suite"],
        "generalization": ["SHAPES_CSV", "model_facts",
                           "bits_per_byte", "fit_or_reason", "subset_table", "k_table",
                           "coupling_and_bits", "facts_table"],
        "lm_task": ["sequences", "spread_rows", "LanguageModelTask"],
        "population": ["MEASURES", "SIZE_AND_SHAPE", "coupling_scores", "finals",
                       "measure_models", "population_frame", "single_fits", "r2_advantage",
                       "partial_coefficient", "population_markdown", "fits_markdown"],
        "loop": ["WEIGHTS", "METRICS", "OPTIMIZER", "METRIC_KEYS", "log", "TrainTask",
                 "read_metrics", "RunResult", "run_lock", "train"],
        "schedule": ["Schedule", "checkpoint_steps", "check_steps"],
        "suite": ["Size", "Run", "Suite", "SIZES", "SUITES", "get_suite", "gpt_neox_config",
                  "PreparedData", "suite_documents", "prepare_data", "LanguageModelTask",
                  "population_runs",
                  "matmul_params", "run_config", "train_run", "train_suite", "heldout_prompts",
                  "add_parser", "run_cli"],
        "summary": ["suite_table", "EmergenceTiming", "emergence_timing", "endpoints"],
    },
)
