#!/usr/bin/env bash
# Stages what the MPI runs need on a machine without MPI and without a package registry (the
# lent GPU machines): batch_kselect, heap_bench, sssp and mpi_selfcheck built with MPI,
# Graph500's reference SSSP where GRAPH500_SRC names a clone (scripts/build-graph500.sh), and
# Debian's OpenMPI 4.1 runtime unpacked beside them (apt-get download + dpkg -x of
# openmpi-bin, libopenmpi3 and what they need, less the libraries such a machine has and what
# the runs do not load), in .gpu/mpi (ignored by git, about 50 MiB: links become files).
#
# On that machine, from a copy of this working tree with .gpu beside it:
#   source .gpu/mpi/env.sh                 # PATH, LD_LIBRARY_PATH, OPAL_PREFIX, root flags
#   mpirun -np 4 --bind-to none .gpu/mpi/bin/batch_kselect --device nvidia --mode gpu
#   bash scripts/kselect-ranks.sh .gpu/mpi/bin OUT.jsonl
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
rm -rf .gpu/mpi
mkdir -p .gpu/mpi/bin .gpu/mpi/debs
cargo build --release -p asym-apps --features mpi --bin batch_kselect --bin heap_bench --bin sssp
cargo build --release -p asym-mpi --bin mpi_selfcheck
cp target/release/{batch_kselect,heap_bench,sssp,mpi_selfcheck} .gpu/mpi/bin/
if [[ -n ${GRAPH500_SRC:-} ]]; then
  bash scripts/build-graph500.sh "$GRAPH500_SRC" .gpu/mpi/bin >/dev/null
  rm -f .gpu/mpi/bin/build.log
fi
strip --strip-all .gpu/mpi/bin/*
# The runtime's closure, less what every Linux machine has (libc, its neighbours), what the
# runs never load (installers' tools, XML topology import and its ICU), and OpenCL's loader.
skip='^(libc6|libgcc-s1|libstdc\+\+6|gcc-12-base|zlib1g|libzstd1|liblzma5|libudev1|libsystemd0|
libcap2|libgcrypt20|libgpg-error0|liblz4-1|libselinux1|libpcre2-8-0|libcrypt1|debconf|cdebconf|
dpkg|tar|perl.*|install-info|libdebian-installer4|libnewt0.52|libslang2|libtextwrap1|
readline-common|libreadline8|libtinfo6|libicu72|libxml2|ocl-icd-libopencl1|libx11-.*|libxcb.*|
libxau6|libxdmcp6|libbsd0|libmd0|libxext6|libxnvctrl0|x11-common|openssh-client|.*krb5.*|
libk5crypto3|libcom-err2|libkeyutils1|libssl3|libedit2|libfido2-1|libcbor0.*|adduser|passwd|
libsemanage.*|libsepol2|libpam.*|libaudit.*|debianutils|sensible-utils|base-files|mawk|
coreutils|init-system-helpers|libacl1|libattr1|libdb5.3|libgdbm.*|libbz2-1.0|libexpat1|
libsqlite3-0|libncursesw6)$'
skip=${skip//$'\n'/}
mapfile -t pkgs < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances openmpi-bin libopenmpi3 | grep '^\w' | sort -u |
  grep -v -E "$skip")
(cd .gpu/mpi/debs && apt-get download "${pkgs[@]}" >/dev/null)
for d in .gpu/mpi/debs/*.deb; do dpkg -x "$d" .gpu/mpi/root; done
rm -rf .gpu/mpi/debs .gpu/mpi/root/usr/share/{doc,man,lintian} \
  .gpu/mpi/root/usr/lib/x86_64-linux-gnu/hwloc/hwloc_xml_libxml.so
# Links become files (the copy that carries the bundle may not keep links), and mpirun is
# Debian's orterun under the name the alternatives system would give it.
cp -rL .gpu/mpi/root .gpu/mpi/flat && rm -rf .gpu/mpi/root && mv .gpu/mpi/flat .gpu/mpi/root
cp .gpu/mpi/root/usr/bin/orterun .gpu/mpi/bin/mpirun
cat >.gpu/mpi/env.sh <<'ENV'
# Sourced on the machine that runs the bundle: the unpacked OpenMPI found by path.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$here/root/usr
export PATH=$here/bin:$root/bin:$PATH
export LD_LIBRARY_PATH=$root/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu/openmpi/lib:${LD_LIBRARY_PATH:-}
export OPAL_PREFIX=$root
export OPAL_LIBDIR=$root/lib/x86_64-linux-gnu/openmpi/lib
# PMIx looks for its plugins where Debian puts them: here, not a different system PMIx's.
export PMIX_INSTALL_PREFIX=$root/lib/x86_64-linux-gnu/pmix2
export PMIX_MCA_mca_base_component_path=$root/lib/x86_64-linux-gnu/pmix2/lib/pmix
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One host: shared memory between the ranks, no network transports (UCX, libfabric).
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_mtl=^ofi,psm,psm2
export PMIX_MCA_pcompress_base_silence_warning=1
ENV
git rev-parse --short HEAD >.gpu/mpi/COMMIT 2>/dev/null || echo unknown >.gpu/mpi/COMMIT
du -sh .gpu/mpi
