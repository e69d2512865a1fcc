"""Prompt suites (six leaderboard tasks, SQuAD, named prompts) and the book's committed fact tables.

May import: ``core``.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["named", "packaged", "prompts", "squad"],
    submod_attrs={
        "named": ["Prompt", "NAMED_PROMPTS", "shorten_prompt"],
        "packaged": ["OFFLINE_FILES"],
        "prompts": ["Source", "ALL_TASKS", "TASK_FORMATS", "COT_SUFFIX", "HUB_DATASETS",
                    "mmlu_subjects", "load_task", "sample_leaderboard", "zero_shot_cot",
                    "gsm8k_solution_steps"],
        "squad": ["SquadArticle", "squad_articles", "squad_prompts", "question_texts"],
    },
)
