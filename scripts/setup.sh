#!/usr/bin/env bash
# Installs what asym needs on Debian 12 when it is missing: an OpenCL driver (PoCL), the ICD
# loader, hwloc, clinfo, pkg-config, a C toolchain for linking, and OpenMPI with libclang
# (the mpi crate's bindings) for mpi/ and the programs' `mpi` feature. As root it runs apt-get;
# otherwise it prints the exact command and fails. Sourced by scripts/main.sh and
# scripts/test.sh; safe to run again (does nothing when everything is present).
set -euo pipefail

packages=(pocl-opencl-icd ocl-icd-opencl-dev libhwloc-dev clinfo pkg-config gcc libc6-dev
  libopenmpi-dev openmpi-bin libclang-dev)
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
