#!/usr/bin/env bash
# Installs CPython 3.14 and 3.15 from Debian sid's .deb files, for tests/python on a Debian 12
# machine. Optional for developers; CI does not run it.
#
# The packages and the libraries they need (sid's glibc among them) are extracted into one private
# root (/opt/sid-python); each interpreter is patched to use that root's dynamic loader, with a
# DT_RPATH (not RUNPATH: it also covers the extension modules and LD_PRELOADed objects) on the
# root's library directory, and linked as /root/.pyenv/versions/X.Y.Z/bin/python3, where
# python_stacks_test looks for interpreters.
#
# Usage: tools/install-sid-pythons.sh [MINOR...]   (default: 3.14 3.15); as root.
# Fails, naming the package, when a version is no longer in sid.
set -euo pipefail

mirror=${SID_MIRROR:-http://deb.debian.org/debian}
root=${SID_PYTHON_ROOT:-/opt/sid-python}
versions_dir=${PYENV_VERSIONS_DIR:-/root/.pyenv/versions}
minors=("$@")
((${#minors[@]})) || minors=(3.14 3.15)

# What the interpreters and their extension modules link against (see each package's Depends).
libraries=(
  libc6 libgcc-s1 zlib1g libexpat1 libssl3t64 libffi8 libzstd1 libbz2-1.0 liblzma5 libmpdec4
  libsqlite3-0 libuuid1 libncursesw6 libtinfo6 libreadline8t64 libdb5.3t64 libcrypt1
)

die() {
  echo "install-sid-pythons: $*" >&2
  exit 1
}

for tool in curl xz dpkg-deb patchelf sha256sum cc; do
  command -v "$tool" >/dev/null || die "needs $tool"
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "install-sid-pythons: reading sid's package index"
curl -fsS "$mirror/dists/sid/main/binary-amd64/Packages.xz" | xz -dc >"$work/Packages" ||
  die "cannot read $mirror/dists/sid/main/binary-amd64/Packages.xz"

# Prints "VERSION FILENAME SHA256" of package $1 (amd64 or all), or nothing when sid lacks it.
package_entry() {
  awk -v want="$1" '
    /^Package: / { name = $2; version = file = sum = ""; arch = "" }
    /^Version: / { version = $2 }
    /^Architecture: / { arch = $2 }
    /^Filename: / { file = $2 }
    /^SHA256: / { sum = $2 }
    /^$/ {
      if (name == want && (arch == "amd64" || arch == "all")) { print version, file, sum; exit }
      name = ""
    }
    END { if (name == want && file != "") print version, file, sum }
  ' "$work/Packages"
}

# Downloads package $1, checks its checksum and extracts it into the root.
install_package() {
  local entry version file sum
  entry=$(package_entry "$1")
  [[ -n $entry ]] || die "$1 is no longer in Debian sid; pick the versions sid has now " \
    "(grep '^Package: python3\.' in its Packages index) or fetch it from snapshot.debian.org"
  read -r version file sum <<<"$entry"
  curl -fsS -o "$work/package.deb" "$mirror/$file" || die "cannot download $mirror/$file"
  echo "$sum  $work/package.deb" | sha256sum --quiet -c - || die "checksum mismatch for $file"
  dpkg-deb -x "$work/package.deb" "$root"
  echo "install-sid-pythons: $1 $version"
}

mkdir -p "$root"
for minor in "${minors[@]}"; do
  for package in "python$minor-minimal" "libpython$minor-minimal" "libpython$minor-stdlib" \
    "libpython$minor-dev"; do
    [[ -n $(package_entry "$package") ]] || die "$package is no longer in Debian sid"
  done
done
for package in "${libraries[@]}"; do install_package "$package"; done

libdir="$root/usr/lib/x86_64-linux-gnu"
loader="$libdir/ld-linux-x86-64.so.2"
[[ -e $loader ]] || die "sid's libc6 has no $loader"

# A shared object built on this machine, to check that LD_PRELOAD works under sid's loader.
echo 'int preload_marker(void) { return 42; }' >"$work/preload.c"
cc -shared -fPIC -o "$work/libpreload.so" "$work/preload.c"

for minor in "${minors[@]}"; do
  for package in "python$minor-minimal" "libpython$minor-minimal" "libpython$minor-stdlib" \
    "libpython$minor-dev"; do
    install_package "$package"
  done
  read -r version _ <<<"$(package_entry "python$minor-minimal")"
  upstream=${version%%-*}
  interpreter="$root/usr/bin/python$minor"
  patchelf --set-interpreter "$loader" --force-rpath --set-rpath "$libdir" "$interpreter"

  # The interpreter finds its standard library from the link's target (sys.prefix = $root/usr).
  mkdir -p "$versions_dir/$upstream/bin"
  ln -sfn "$interpreter" "$versions_dir/$upstream/bin/python3"
  python="$versions_dir/$upstream/bin/python3"
  LD_PRELOAD="$work/libpreload.so" "$python" -c '
import ctypes, json, ssl, sqlite3, sys, threading
assert sys.prefix.endswith("/usr"), sys.prefix
assert ctypes.CDLL(None).preload_marker() == 42
t = threading.Thread(target=lambda: None); t.start(); t.join()
' || die "$python does not run (stdlib, ctypes, threading or LD_PRELOAD)"
  echo "install-sid-pythons: $python ($("$python" -c 'import sys; print(sys.version.split()[0])'))"
done
