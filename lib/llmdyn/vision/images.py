"""Image data sets for the vision transformers of chapter 10, read with NumPy from local files.

CIFAR-10 (paper A §3.4) cannot be downloaded here, so three sources are read, all offline:

- ``"fashion-mnist"`` (default): Fashion-MNIST (Xiao et al., 2017; MIT licence), 60,000 training
  and 10,000 test images of 28×28 grey clothing items in 10 classes, from Debian's
  ``dataset-fashion-mnist`` package (idx files under ``/usr/share/datasets/fashion-mnist/``).
- a directory of CIFAR-10 in its *binary* format (``data_batch_1.bin`` … ``data_batch_5.bin``,
  ``test_batch.bin``; each record is 1 label byte and 3,072 pixel bytes, red, green then blue
  planes of 32×32). The pickled "python version" is never read (no pickle loads).
- ``"digits"``: scikit-learn's bundled 8×8 hand-written digits (1,797 images), the no-install
  fallback; it is nearly separable, so the runs of a grid barely differ in accuracy.

The idx format (LeCun's MNIST files): a big-endian magic number ``0x0000 08 NN`` (``08``:
unsigned bytes, ``NN``: number of dimensions), then ``NN`` big-endian uint32 sizes, then the bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from llmdyn import LlmdynError

FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
FASHION_MNIST_FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
                       "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
FASHION_MNIST_CLASSES = ("T-shirt/top", "trouser", "pullover", "dress", "coat", "sandal", "shirt",
                         "sneaker", "bag", "ankle boot")
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
                   "truck")
CIFAR10_RECORD = 1 + 3 * 32 * 32  # label byte + red, green, blue planes
INSTALL_HINT = ("install it with `apt-get install -y dataset-fashion-mnist` (as root; `make setup` "
                "does it), or use dataset='digits' (bundled with scikit-learn) or a CIFAR-10 "
                "binary-format directory")


@dataclass(frozen=True)
class ImageData:
    """Train and test images, standardised with the training set's per-channel mean and std.

    Attributes:
        name: the data set, as the chapter names it.
        source: where the files were read from.
        train_x: ``[n_train, channels, height, width]`` float32.
        train_y: ``[n_train]`` int64 class labels.
        test_x: ``[n_test, channels, height, width]`` float32.
        test_y: ``[n_test]`` int64.
        classes: class names, index = label.
        digest: sha256 of the raw pixels and labels (the runs' configs record it).
    """

    name: str
    source: str
    train_x: np.ndarray
    train_y: np.ndarray
    test_x: np.ndarray
    test_y: np.ndarray
    classes: tuple[str, ...]
    digest: str

    @property
    def shape(self) -> tuple[int, int, int]:
        """[channels, height, width] of one image."""
        return tuple(self.train_x.shape[1:])


def read_idx(path: str | Path) -> np.ndarray:
    """An idx file (gzip-compressed or not, told by its first bytes) as a uint8 array.

    Raises:
        LlmdynError: the file is missing, its magic number is not an unsigned-byte idx file,
            or its size does not match the header.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
        raw = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw  # gzip's magic bytes
    except (OSError, gzip.BadGzipFile, EOFError) as err:
        raise LlmdynError(f"cannot read idx file {path}: {err}") from None
    if len(raw) < 4 or raw[:3] != b"\x00\x00\x08" or raw[3] == 0:
        raise LlmdynError(f"{path} is not an idx file of unsigned bytes (magic number "
                          f"{raw[:4].hex() or 'missing'}, expected 000008NN)")
    n_dims = raw[3]
    header = 4 + 4 * n_dims
    dims = tuple(int(d) for d in np.frombuffer(raw[4:header], dtype=">u4"))
    if len(dims) != n_dims or len(raw) - header != int(np.prod(dims)):
        raise LlmdynError(f"{path}: header says shape {dims} ({int(np.prod(dims))} bytes) but "
                          f"the file holds {len(raw) - header} bytes after it; the file is "
                          "truncated or not what its name says")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def _idx_path(directory: Path, stem: str) -> Path:
    for name in (f"{stem}.gz", stem):
        if (directory / name).is_file():
            return directory / name
    raise LlmdynError(f"no {stem}[.gz] in {directory}: Fashion-MNIST not found; {INSTALL_HINT}")


def _standardise(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``[n, channels, height, width]`` bytes → float32 standardised by the training mean, std."""
    train = train.astype(np.float32) / 255
    test = test.astype(np.float32) / 255
    mean = train.mean(axis=(0, 2, 3), keepdims=True)
    std = train.std(axis=(0, 2, 3), keepdims=True)
    return (train - mean) / std, (test - mean) / std


def _digest(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _finish(name, source, train_x, train_y, test_x, test_y, classes) -> ImageData:
    digest = _digest(train_x, train_y, test_x, test_y)
    tx, vx = _standardise(train_x, test_x)
    return ImageData(name, source, tx, train_y.astype(np.int64), vx, test_y.astype(np.int64),
                     tuple(classes), digest)


def load_fashion_mnist(directory: str | Path = FASHION_MNIST_DIR) -> ImageData:
    """Fashion-MNIST's idx files from ``directory`` (Debian's package by default)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise LlmdynError(f"Fashion-MNIST directory {directory} does not exist; {INSTALL_HINT}")
    split = {}
    for part, (images, labels) in FASHION_MNIST_FILES.items():
        x = read_idx(_idx_path(directory, images))
        y = read_idx(_idx_path(directory, labels))
        if x.ndim != 3 or y.ndim != 1 or len(x) != len(y):
            raise LlmdynError(f"Fashion-MNIST {part} files in {directory} disagree: images "
                              f"{x.shape}, labels {y.shape} (expected [n, 28, 28] and [n])")
        split[part] = (x[:, None], y)  # [n, 1, 28, 28]
    return _finish("Fashion-MNIST", str(directory), *split["train"], *split["test"],
                   FASHION_MNIST_CLASSES)


def _cifar_file(path: Path) -> tuple[np.ndarray, np.ndarray]:
    raw = path.read_bytes()
    if not raw or len(raw) % CIFAR10_RECORD:
        raise LlmdynError(f"{path} holds {len(raw)} bytes, not a whole number of CIFAR-10 "
                          f"records of {CIFAR10_RECORD} bytes (binary version expected, not "
                          "the python/pickle version)")
    records = np.frombuffer(raw, dtype=np.uint8).reshape(-1, CIFAR10_RECORD)
    return records[:, 1:].reshape(-1, 3, 32, 32), records[:, 0]


def load_cifar10(directory: str | Path) -> ImageData:
    """CIFAR-10 in its binary format: ``data_batch_{1..5}.bin`` and ``test_batch.bin``."""
    directory = Path(directory)
    names = [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]
    missing = [n for n in names if not (directory / n).is_file()]
    if missing:
        raise LlmdynError(f"CIFAR-10 binary files not found in {directory}: missing "
                          f"{', '.join(missing)} (the 'binary version' of CIFAR-10; the pickled "
                          "python version is not read)")
    train = [_cifar_file(directory / n) for n in names[:5]]
    test_x, test_y = _cifar_file(directory / names[5])
    if test_y.max() > 9:
        raise LlmdynError(f"{directory}: labels up to {test_y.max()}; CIFAR-10 has 10 classes")
    return _finish("CIFAR-10", str(directory), np.concatenate([x for x, _ in train]),
                   np.concatenate([y for _, y in train]), test_x, test_y, CIFAR10_CLASSES)


def load_digits(n_test: int = 360) -> ImageData:
    """scikit-learn's 8×8 digits (pixel values 0–16), the last ``n_test`` images held out."""
    from sklearn.datasets import load_digits as sk_digits

    warnings.warn("dataset 'digits' (8×8, 1,797 images) is nearly separable: the runs of a grid "
                  "will barely differ in accuracy; use Fashion-MNIST or CIFAR-10 to compare them",
                  stacklevel=2)
    bunch = sk_digits()
    x = (bunch.images * (255 / 16)).round().astype(np.uint8)[:, None]  # [n, 1, 8, 8]
    y = bunch.target
    return _finish("8×8 digits (scikit-learn)", "sklearn.datasets.load_digits", x[:-n_test],
                   y[:-n_test], x[-n_test:], y[-n_test:], [str(d) for d in range(10)])


def load_images(dataset: str) -> ImageData:
    """``"fashion-mnist"``, ``"digits"``, or a directory holding Fashion-MNIST or CIFAR-10 files.

    Raises:
        LlmdynError: an unknown name, or files that are missing or malformed (the message names
            what was looked for).
    """
    if dataset == "fashion-mnist":
        return load_fashion_mnist()
    if dataset == "digits":
        return load_digits()
    path = Path(dataset)
    if not path.is_dir():
        raise LlmdynError(f"dataset {dataset!r} is neither 'fashion-mnist', 'digits' nor an "
                          "existing directory of CIFAR-10 binary files (data_batch_1.bin … "
                          "test_batch.bin) or Fashion-MNIST idx files")
    if (path / "test_batch.bin").exists() or (path / "data_batch_1.bin").exists():
        return load_cifar10(path)
    return load_fashion_mnist(path)
