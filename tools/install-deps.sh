#!/bin/sh
# Install every build and test dependency of clustersim from Debian packages.
# Run as root on Debian 12 (bookworm). Safe to run again. xmllint
# (libxml2-utils) and rsvg-convert (librsvg2-bin) check the SVG charts in tests;
# GNU time (time) measures peak memory in bench/scale.sh; clang and its
# libFuzzer runtime (libclang-rt-14-dev) build tools/fuzz.sh's targets;
# valgrind runs `make check-valgrind`; Open MPI (openmpi-bin, libopenmpi-dev)
# builds `./configure --with-mpi` and runs its 2-rank test.
set -eu
PKGS="build-essential autoconf automake libtool pkg-config \
  libgsl-dev libsqlite3-dev libcsv-dev libyaml-dev check sqlite3 \
  libxml2-utils librsvg2-bin time clang libclang-rt-14-dev valgrind \
  openmpi-bin libopenmpi-dev"
export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: run as root (apt-get needs it)" >&2
  exit 1
fi
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends $missing
fi
