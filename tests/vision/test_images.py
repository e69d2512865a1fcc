"""Image loaders: idx and CIFAR-10 binary files written here, with known contents and faults."""

import gzip

import numpy as np
import pytest

from llmdyn import LlmdynError
from llmdyn.vision import images


def write_idx(path, array, *, gz=True):
    """An idx file of unsigned bytes: magic 0x000008NN, NN big-endian uint32 sizes, the bytes."""
    array = np.asarray(array, dtype=np.uint8)
    raw = bytes([0, 0, 8, array.ndim]) + np.array(array.shape, ">u4").tobytes() + array.tobytes()
    path.write_bytes(gzip.compress(raw) if gz else raw)
    return path


def write_fashion_mnist(directory, n_train=64, n_test=32, *, seed=0, gz=True):
    """Fake Fashion-MNIST (28×28 random bytes, labels 0–9) in Debian's file names."""
    rng = np.random.default_rng(seed)
    suffix = ".gz" if gz else ""
    for (img, lab), n in zip(images.FASHION_MNIST_FILES.values(), (n_train, n_test), strict=True):
        write_idx(directory / f"{img}{suffix}", rng.integers(0, 256, (n, 28, 28)), gz=gz)
        write_idx(directory / f"{lab}{suffix}", rng.integers(0, 10, n), gz=gz)
    return directory


@pytest.mark.parametrize("gz", [True, False])
def test_idx_round_trip_and_standardisation(tmp_path, gz):
    a = np.arange(2 * 3 * 4).reshape(2, 3, 4)
    assert np.array_equal(images.read_idx(write_idx(tmp_path / "x", a, gz=gz)), a)
    data = images.load_fashion_mnist(write_fashion_mnist(tmp_path, gz=gz))
    assert data.train_x.shape == (64, 1, 28, 28) and data.test_x.shape == (32, 1, 28, 28)
    assert data.train_x.dtype == np.float32 and data.train_y.dtype == np.int64
    # standardised with the training set's statistics: mean 0, std 1 there (float32 sums)
    assert abs(data.train_x.mean()) < 1e-5 and abs(data.train_x.std() - 1) < 1e-5
    assert data.name == "Fashion-MNIST" and len(data.classes) == 10 and len(data.digest) == 64


def test_missing_directory_and_files_name_what_was_looked_for(tmp_path):
    with pytest.raises(LlmdynError, match="does not exist.*apt-get install -y dataset-fashion"):
        images.load_fashion_mnist(tmp_path / "nowhere")
    with pytest.raises(LlmdynError, match=r"no train-images-idx3-ubyte\[\.gz\]"):
        images.load_fashion_mnist(tmp_path)
    with pytest.raises(LlmdynError, match="missing data_batch_1.bin"):
        images.load_cifar10(tmp_path)
    with pytest.raises(LlmdynError, match="neither 'fashion-mnist', 'digits' nor"):
        images.load_images(str(tmp_path / "nowhere"))


def test_bad_magic_and_truncated_files_are_refused(tmp_path):
    bad = tmp_path / "bad"
    bad.write_bytes(b"\x00\x00\x0d\x01" + b"\x00" * 8)  # 0x0d: float type, not bytes
    with pytest.raises(LlmdynError, match="not an idx file of unsigned bytes.*00000d01"):
        images.read_idx(bad)
    short = write_idx(tmp_path / "short", np.zeros((4, 5)), gz=False)
    short.write_bytes(short.read_bytes()[:-3])
    with pytest.raises(LlmdynError, match=r"header says shape \(4, 5\) \(20 bytes\).*17 bytes"):
        images.read_idx(short)
    (tmp_path / "broken.gz").write_bytes(gzip.compress(b"\x00\x00\x08\x01")[:-4])
    with pytest.raises(LlmdynError, match="cannot read idx file"):
        images.read_idx(tmp_path / "broken.gz")


def test_cifar10_binary_records(tmp_path):
    rng = np.random.default_rng(1)
    for name, n in [*((f"data_batch_{i}.bin", 3) for i in range(1, 6)), ("test_batch.bin", 2)]:
        records = np.concatenate([rng.integers(0, 10, (n, 1)),
                                  rng.integers(0, 256, (n, 3072))], 1).astype(np.uint8)
        (tmp_path / name).write_bytes(records.tobytes())
    data = images.load_images(str(tmp_path))
    assert data.name == "CIFAR-10" and data.train_x.shape == (15, 3, 32, 32)
    raw = np.frombuffer((tmp_path / "test_batch.bin").read_bytes(), np.uint8).reshape(2, -1)
    assert np.array_equal(data.test_y, raw[:, 0])  # label byte first, then R, G, B planes
    (tmp_path / "test_batch.bin").write_bytes(raw.tobytes()[:-1])
    with pytest.raises(LlmdynError, match="not a whole number of CIFAR-10 records"):
        images.load_cifar10(tmp_path)


def test_digits_fallback_warns():
    with pytest.warns(UserWarning, match="nearly separable"):
        data = images.load_images("digits")
    assert data.train_x.shape[1:] == (1, 8, 8) and len(data.test_y) == 360
