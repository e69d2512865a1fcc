"""Whether a hub id can load here: cached, or the hub reachable, decided in seconds, not 30."""

from __future__ import annotations

import os
import socket
import threading
from urllib.parse import urlparse

from llmdyn import LlmdynError

__all__ = ["check_hub"]

_TIMEOUT_S = 5.0  # name lookup plus TCP connect; far shorter than transformers' retries


def _offline() -> bool:
    """Whether the user asked Hugging Face libraries to stay offline."""
    return any(os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")
               for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def _cached(repo: str, revision: str | None) -> bool:
    """Whether the hub cache already holds the repository's config (loads without a network)."""
    from huggingface_hub import try_to_load_from_cache  # here: only hub ids need it

    found = try_to_load_from_cache(repo, "config.json", revision=revision)
    return isinstance(found, str)


def _endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def reachable(url: str, timeout: float = _TIMEOUT_S) -> bool:
    """Whether a TCP connection to `url`'s host opens within `timeout` seconds.

    The name lookup, which a socket timeout does not bound, runs in a daemon thread.
    """
    parsed = urlparse(url)
    host, port = parsed.hostname, parsed.port or (80 if parsed.scheme == "http" else 443)
    if not host:
        return False
    result: list[bool] = []

    def connect() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                result.append(True)
        except OSError:
            result.append(False)

    thread = threading.Thread(target=connect, daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(result and result[0])


def check_hub(spec: str, repo: str, revision: str | None) -> None:
    """Refuse at once a hub id that is neither cached nor downloadable from here.

    Raises:
        LlmdynError: ``HF_HUB_OFFLINE`` is set (or the hub cannot be reached within a few
            seconds) and the model is not in the local Hugging Face cache; the message says
            what to pass instead.
    """
    if _cached(repo, revision):
        return
    endpoint = _endpoint()
    if _offline():
        why = "HF_HUB_OFFLINE is set"
    elif not reachable(endpoint):
        why = f"{endpoint} cannot be reached from this machine"
    else:
        return
    raise LlmdynError(f"model {spec!r} is a Hugging Face hub id, but {why} and it is not in the "
                      "local hub cache; load it once on a machine with a network (the cache "
                      "then serves it), pass a local checkpoint directory or .gguf file, or "
                      "use a packaged model (`llmdyn models` lists them)")
