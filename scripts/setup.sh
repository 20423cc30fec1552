#!/usr/bin/env bash
# Installs what asym needs on Debian 12 when it is missing: an OpenCL driver (PoCL), the ICD
# loader, hwloc, clinfo, pkg-config, a C toolchain for linking, OpenMPI with libclang (the
# mpi crate's bindings) for mpi/ and the programs' `mpi` feature, and Python 3 with venv and
# its headers for the Python package (python/). As root it runs apt-get; otherwise it prints
# the exact command and fails. With `--python` it also makes the virtual environment .venv/
# with what the Python package's tests use (numpy, scipy, pytest, sortedcontainers; from
# PyPI). Run by scripts/main.sh and scripts/test.sh; safe to run again (does nothing when
# everything is present).
set -euo pipefail

packages=(pocl-opencl-icd ocl-icd-opencl-dev libhwloc-dev clinfo pkg-config gcc libc6-dev
  libopenmpi-dev openmpi-bin libclang-dev python3 python3-venv python3-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    echo "asym setup: installing ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "asym setup: missing Debian packages: ${missing[*]}" >&2
    echo "run:  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "asym setup: Rust is missing; install it with:" >&2
  echo "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y && . \"\$HOME/.cargo/env\"" >&2
  exit 1
fi
if ! clinfo -l 2>/dev/null | grep -q "Device"; then
  echo "asym setup: clinfo lists no OpenCL device; check /etc/OpenCL/vendors/*.icd" >&2
  exit 1
fi
if [[ ${1:-} == --python ]]; then
  venv=.venv
  if [[ ! -x $venv/bin/python ]]; then
    echo "asym setup: making the Python environment $venv" >&2
    python3 -m venv "$venv"
  fi
  if ! "$venv/bin/python" -c "import numpy, scipy, pytest, sortedcontainers" 2>/dev/null; then
    echo "asym setup: installing numpy scipy pytest sortedcontainers into $venv" >&2
    "$venv/bin/python" -m pip install -q --disable-pip-version-check \
      numpy scipy pytest sortedcontainers || {
      echo "asym setup: pip could not install them; run:" >&2
      echo "  $venv/bin/python -m pip install numpy scipy pytest sortedcontainers" >&2
      exit 1
    }
  fi
fi
