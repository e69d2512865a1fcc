"""Prompt suites (leaderboard tasks, SQuAD, named and own prompts) and the committed fact tables.

May import: ``core``.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["ambiguity", "figures", "named", "packaged", "prompts", "squad", "stems"],
    submod_attrs={
        "ambiguity": ["AMBIGUOUS_PROMPTS", "CLEAR_PROMPTS"],
        "figures": ["DATA", "STATUSES", "PAPERS", "KINDS", "METADATA_KEY", "BookFigure",
                    "PaperFigure", "book_figures", "paper_figures", "figure", "drawn_by"],
        "named": ["Prompt", "NAMED_PROMPTS", "shorten_prompt"],
        "packaged": ["OFFLINE_FILES", "package_dir", "read_rows", "check_n"],
        "prompts": ["Source", "ALL_TASKS", "TASK_FORMATS", "COT_SUFFIX", "HUB_DATASETS",
                    "mmlu_subjects", "load_task", "sample_leaderboard", "zero_shot_cot",
                    "gsm8k_solution_steps"],
        "squad": ["SquadArticle", "squad_prompt", "squad_articles", "squad_prompts",
                  "question_texts", "prompts_then_questions"],
        "stems": ["question_stems"],
    },
)
