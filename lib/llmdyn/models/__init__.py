"""Loading models (packaged GGUF, tiny test configs, local directories, hub ids), twins, digests.

May import: ``core``.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["architectures", "convert", "files", "loading", "packaged", "pretrained",
                "tokenizers", "twins"],
    submod_attrs={
        "architectures": ["ARCHITECTURES", "TINY_CONFIGS", "Architecture"],
        "convert": ["MANIFEST", "conversion_log", "converted", "verify_converted"],
        "files": ["check_model_dir", "dir_digest", "file_sha256", "local_key", "remember",
                  "sha256_of"],
        "loading": ["LoadedModel", "known_models", "load_model", "load_each", "load_twins"],
        "packaged": ["local_gguf", "packaged_safetensors"],
        "pretrained": ["load_pretrained", "quiet_transformers"],
        "tokenizers": ["byte_tokenizer"],
        "twins": ["fresh_twin", "twin_config"],
    },
)
