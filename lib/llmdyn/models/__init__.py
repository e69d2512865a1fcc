"""Loading models (packaged GGUF, tiny test configs, local directories, hub ids), twins, digests.

May import: ``core``.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["architectures", "convert", "files", "loading", "packaged", "pretrained", "quiet",
                "tokenizers", "twins"],
    submod_attrs={
        "architectures": ["Architecture", "ARCHITECTURES", "TINY_CONFIGS", "config_value"],
        "convert": ["MANIFEST", "verify_converted", "converted", "conversion_log", "checked_gguf"],
        "files": ["NEEDS", "TOKENIZER_FILES", "checkpoint_files", "weight_files", "cache_dir",
                  "sha256_of", "file_sha256", "remember", "looks_like_path", "check_model_dir",
                  "dir_digest", "local_key"],
        "loading": ["LoadedModel", "ModelShape", "known_models", "load_model", "each_model",
                    "model_shape"],
        "packaged": ["PackagedModel", "PACKAGED", "packaged_safetensors", "local_gguf",
                     "other_packaged"],
        "pretrained": ["load_pretrained"],
        "quiet": ["quiet_transformers"],
        "tokenizers": ["byte_tokenizer"],
        "twins": ["twin_config", "fresh_twin"],
    },
)
