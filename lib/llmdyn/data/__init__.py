"""Prompt suites (six leaderboard tasks, SQuAD, named prompts) and the book's committed fact tables.

May import: ``core``.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["figures", "prompts"],
    submod_attrs={
        "figures": ["DATA", "STATUSES", "PAPERS", "METADATA_KEY", "BookFigure", "PaperFigure",
                    "book_figures", "paper_figures", "figure", "drawn_by"],
        "prompts": ["Source", "ALL_TASKS", "TASK_FORMATS", "COT_SUFFIX", "HUB_DATASETS",
                    "OFFLINE_FILES", "Prompt", "SquadArticle", "NAMED_PROMPTS", "mmlu_subjects",
                    "load_task", "sample_leaderboard", "squad_articles", "squad_prompts",
                    "question_texts", "shorten_prompt", "zero_shot_cot", "gsm8k_solution_steps"],
    },
)
