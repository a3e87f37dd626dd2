#!/usr/bin/env bash
# The release tarball: vramshim-VERSION/ holding the native tree (stage_native.sh: bin/, lib/), the
# man page, the bash and zsh completions where those shells look for them under a prefix, and
# LICENSE and README.md in share/doc/vramshim/: a prefix tree, to unpack into /usr/local as it is.
# Owner root, fixed times and sorted names, so the same inputs give the same bytes.
# Usage: make_release.sh OUT.tar.gz VERSION_FILE NATIVE.tar MAN_PAGE BASH_COMPLETION ZSH_COMPLETION LICENSE README
set -euo pipefail

out=$1 version_file=$2 native=$3 man_page=$4 bash_completion=$5 zsh_completion=$6 license=$7 readme=$8
version=$(tr -cd '0-9A-Za-z.+-' <"$version_file")
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/vramshim-$version"
mkdir -p "$root"
tar -C "$root" -xf "$native"
install -D -m 0644 "$man_page" "$root/share/man/man1/vramshim.1"
install -D -m 0644 "$bash_completion" "$root/share/bash-completion/completions/vramshim"
install -D -m 0644 "$zsh_completion" "$root/share/zsh/site-functions/_vramshim"
install -D -m 0644 "$license" "$root/share/doc/vramshim/LICENSE"
install -D -m 0644 "$readme" "$root/share/doc/vramshim/README.md"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@315532800 --format=gnu \
  -C "$stage" -cf - "vramshim-$version" | gzip -n -9 >"$out"
