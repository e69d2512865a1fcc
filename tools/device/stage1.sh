#!/usr/bin/env bash
# Device call 1 of 2: keep this call's carried files (wheels, prompt data, training corpus, the
# first half of the SmolLM2 GGUF) in $DEVSTAGE, which outlives the call while the machine stays
# warm (30 s after a call: make call 2 at once). Checks their sha256 so a bad transfer shows now.
# Run from the repository root: bash .devbundle/stage1.sh
set -euo pipefail
STAGE=${DEVSTAGE:-/tmp/devstage}
BUNDLE=$(cd "$(dirname "$0")" && pwd)

mkdir -p "$STAGE"
cp -r "$BUNDLE"/{wheels.tar.xz,data.tar.xz,corpus,gguf.part1,SHA256SUMS} "$STAGE"/
cd "$STAGE"
grep -E ' (gguf\.part1|wheels\.tar\.xz|data\.tar\.xz|corpus/.*)$' SHA256SUMS | sha256sum -c --quiet -
echo "stage1: staged in $STAGE ($(du -sh "$STAGE" | cut -f1)), sha256 ok; now call 2 (stage2.sh)"
