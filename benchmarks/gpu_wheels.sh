#!/usr/bin/env bash
# The wheel folder for `bash benchmarks/gpu_check.sh --no-install` (README, "Ready for a GPU").
#
#   bash benchmarks/gpu_wheels.sh        # on a machine that reaches PyPI; writes benchmarks/.gpu-wheels/site
#
# The GPU machines lent to this project have CUDA, torch, transformers, tokenizers, PyYAML,
# Jinja2, filelock and numpy, but no pydantic and reach no package registry. This downloads the
# wheels of pydantic and of its needs, built for the lent machine's Python (CPython 3.12,
# manylinux x86_64; $CULTIVAR_GPU_PYTHON_VERSION overrides 3.12), at the versions pinned below
# (those of the project's tested virtualenv), and unpacks them into one folder that gpu_check.sh
# puts on PYTHONPATH: $CULTIVAR_GPU_WHEELS, default benchmarks/.gpu-wheels/site (ignored by git:
# name benchmarks/.gpu-wheels in the device tool's `carry`), with the Python version it was built
# for in its .python-version. It is built aside and swapped in when complete; its size is printed
# at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  pydantic==2.14.4
  pydantic-core==2.50.5
  annotated-types==0.8.0
  typing-inspection==0.4.5
  typing-extensions==4.16.0   # pydantic needs a recent one; the lent machine's may be older
)
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
VERSION="${CULTIVAR_GPU_PYTHON_VERSION:-3.12}"
SITE="${CULTIVAR_GPU_WHEELS:-benchmarks/.gpu-wheels/site}"
building="$SITE.building"
rm -rf "$building"
mkdir -p "$building/.wheels"
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "$VERSION" \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d "$building/.wheels" "${PACKAGES[@]}"
count=$(find "$building/.wheels" -name '*.whl' | wc -l)
if [ "$count" != "${#PACKAGES[@]}" ]; then
  echo "gpu_wheels.sh: expected ${#PACKAGES[@]} wheels, got $count" >&2
  exit 1
fi
for wheel in "$building"/.wheels/*.whl; do
  "$PY" -m zipfile -e "$wheel" "$building"   # a wheel is a zip of what it installs
done
rm -rf "$building/.wheels"
echo "$VERSION" > "$building/.python-version"   # gpu_check.sh refuses another Python
rm -rf "$SITE"
mv "$building" "$SITE"
echo "wheel folder $SITE (for Python $VERSION): $(du -sh "$SITE" | cut -f1)" \
     "($(du -sb "$SITE" | cut -f1) bytes), ${#PACKAGES[@]} packages:"
ls "$SITE"
