"""The Pythia-style training machinery: corpus, BPE, the resumable loop, schedules, checkpoints.

Chapter 08's and 09's analyses of the runs live in ``llmdyn.emergence`` and
``llmdyn.generalization``.

May import: ``models``, ``data``, ``core``.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["baselines", "checkpoints", "corpus", "lm_task", "loop", "schedule", "suite"],
    submod_attrs={
        "baselines": ["DEV_FRACTION", "CountModels", "fit_counts", "choose_weight",
                      "cross_entropies", "reference_losses"],
        "checkpoints": ["PYTHIA_TOKENS_PER_STEP", "Checkpoint", "suite_checkpoints", "by_run"],
        "corpus": ["EOS", "NpmSource", "NPM_SOURCES", "NPM_NAMES", "Document", "Split",
                   "npm_dir", "fetch_npm", "load_documents", "split_documents", "corpus_digest",
                   "train_tokenizer",
                   "token_stream", "text_snippets"],
        "lm_task": ["sequences", "spread_rows", "LanguageModelTask"],
        "loop": ["WEIGHTS", "METRICS", "OPTIMIZER", "METRIC_KEYS", "log", "TrainTask",
                 "read_metrics", "RunResult", "run_lock", "train"],
        "schedule": ["Schedule", "checkpoint_steps", "check_steps"],
        "suite": ["Size", "Run", "Suite", "SIZES", "SUITES", "get_suite", "gpt_neox_config",
                  "PreparedData", "suite_documents", "prepare_data", "LanguageModelTask",
                  "population_runs",
                  "matmul_params", "run_config", "train_run", "train_suite", "heldout_prompts"],
    },
)
