"""Loading models (packaged GGUF, tiny test configs, local directories, hub ids), twins, digests.

May import: ``core``.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["convert", "files", "loading", "packaged", "tokenizers"],
    submod_attrs={
        "convert": ["MANIFEST", "conversion_log", "converted", "verify_converted"],
        "files": ["check_model_dir", "dir_digest", "file_sha256", "local_key", "looks_like_path",
                  "remember", "sha256_of"],
        "loading": ["ARCHITECTURES", "TINY_CONFIGS", "Architecture", "LoadedModel", "known_models",
                    "load_model", "twin_config"],
        "packaged": ["local_gguf", "packaged_safetensors"],
        "tokenizers": ["byte_tokenizer"],
    },
)
