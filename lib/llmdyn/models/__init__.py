"""Loading models (packaged GGUF, tiny test configs, local directories, hub ids), twins, digests.

May import: ``core``.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["convert", "files", "loading", "packaged", "tokenizers"],
    submod_attrs={
        "convert": ["MANIFEST", "verify_converted", "converted", "conversion_log", "checked_gguf"],
        "files": ["NEEDS", "cache_dir", "sha256_of", "file_sha256", "remember", "check_model_dir",
                  "dir_digest", "local_key"],
        "loading": ["Architecture", "ARCHITECTURES", "TINY_CONFIGS", "LoadedModel", "known_models",
                    "load_model", "twin_config", "load_each", "load_twins"],
        "packaged": ["PackagedModel", "PACKAGED", "packaged_safetensors", "local_gguf"],
        "tokenizers": ["byte_tokenizer"],
    },
)
