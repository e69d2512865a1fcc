"""A chapter's params file is refused, unexpanded, when it uses YAML aliases."""

from __future__ import annotations

import time

import pytest

from llmdyn import LlmdynError
from llmdyn.runner.workflow import check_config, merged_config


def alias_bomb(levels: int) -> str:
    """A params file whose ``k`` stands for 9**levels strings through nested aliases."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join([*lines, f"k: *a{levels - 1}", ""])


def test_an_alias_bomb_is_refused_before_anything_expands_it(tmp_path):
    (tmp_path / "05_depth_coupling.yaml").write_text(alias_bomb(9))  # 9**9 strings, ~3 GB
    start = time.process_time()
    with pytest.raises(LlmdynError, match=r"05_depth_coupling\.yaml uses a YAML alias \(\*a0, "
                                          r"line 2\); write the value out in full"):
        check_config(merged_config({"chapter_params": str(tmp_path)}))
    assert time.process_time() - start < 1


def test_a_file_without_aliases_still_loads(tmp_path):
    (tmp_path / "05_depth_coupling.yaml").write_text("k: 4\ngrid_layers: [0, 1]\n")
    assert check_config(merged_config({"chapter_params": str(tmp_path)}))["chapter_params"]
