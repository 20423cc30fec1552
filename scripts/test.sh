#!/usr/bin/env bash
# The whole test suite on the default OpenCL device: every crate with the transport the device
# prefers (fine on PoCL), then everything again with ASYM_SVM=coarse, the
# path NVIDIA GPUs take (examples included), and the device-set tests once more with PoCL
# listing two devices. The release programs and benches are built too, so they cannot rot.
# The MPI tests (mpi/, and the programs built with `--features mpi`) launch jobs of 1, 2 and 4
# ranks with mpirun on this host. The Python package is built as a user builds it
# (`pip install ./python`, into .venv/) and its pytest suite runs on both transports.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --python
export RUST_BACKTRACE=1
cargo build --release --bins --benches
cargo test --workspace
cargo test -p asym-apps --features mpi --test mpi
ASYM_SVM=coarse cargo test -p asym-runtime -p asym-structures -p asym-apps -p asym -p asym-mpi
POCL_DEVICES="pthread pthread" cargo test -p asym-runtime --test device_set
.venv/bin/python -m pip install -q --disable-pip-version-check --force-reinstall --no-deps ./python
.venv/bin/python -m pytest -q python/tests
ASYM_SVM=coarse .venv/bin/python -m pytest -q python/tests
