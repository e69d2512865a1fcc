"""What the OS refused, as one line."""

import errno

from llmdyn.core.failures import as_os_error, os_error_message


def test_a_path_that_cannot_be_one_is_named_with_the_fix():
    assert os_error_message(NotADirectoryError(errno.ENOTDIR, "Not a directory", "/a/f/x")) == \
        "cannot use /a/f/x: a part of the path is a file, not a directory; give another path"
    assert "it is a directory, not a file" in os_error_message(
        IsADirectoryError(errno.EISDIR, "Is a directory", "/a"))
    assert os_error_message(FileNotFoundError(errno.ENOENT, "No such file", "/proc/x.json")) \
        .startswith("cannot use /proc/x.json: no such file or directory (a directory on the way")
    assert os_error_message(FileNotFoundError(errno.ENOENT, "No such file")) is None  # a bug's
    assert os_error_message(OSError(errno.EIO, "I/O error", "/x")) is None


def test_a_libraries_os_error_is_found_in_its_message():
    err = as_os_error(RuntimeError("Error while serializing: I/O error: No space left on device "
                                   "(os error 28)"), "/r/step4.tmp")
    assert (err.errno, err.filename) == (errno.ENOSPC, "/r/step4.tmp")
    assert os_error_message(err).startswith("cannot write /r/step4.tmp: no space left on the "
                                            "device; free space or write elsewhere")
    assert as_os_error(RuntimeError("header too large"), "/x") is None


def test_freeing_space_is_advised_only_for_a_full_disk():
    # `--out /sys/x.json` (permission denied) was told to free space.
    assert os_error_message(PermissionError(errno.EACCES, "Permission denied", "/sys")) == (
        "cannot write /sys: permission denied; write elsewhere: --out, --root, LLMDYN_RESULTS "
        "(results cache) or LLMDYN_CACHE (converted models)")
    assert os_error_message(OSError(errno.EDQUOT, "Disk quota exceeded", "/q")).startswith(
        "cannot write /q: disk quota exceeded; free space or write elsewhere: --out")
