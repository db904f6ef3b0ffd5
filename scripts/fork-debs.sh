#!/bin/bash
# Debian's mongo-c-driver packages with the fork's patches: `make fork-debs`
# and `make check-fork-debs` (mk/fork-debs.mk, docs/fork.md, "Debian packages").
#
#   scripts/fork-debs.sh [--debian DIR] [--source RELEASE=DIR]... [RELEASE...]
#
# RELEASE is bookworm, trixie or unstable (sid); default bookworm. For each,
# the release's source package gets the quilt patches, series lines and
# changelog entry of fork/debian/RELEASE/ (--debian DIR: DIR/RELEASE/), and
# scripts/fork-debs-release.sh builds it, stock and patched, checks one
# against the other, installs the patched packages over the stock ones,
# tests them and goes back to stock:
#   bookworm  on this machine, which must be Debian 12; the source is
#             `apt-get source mongo-c-driver` of exactly the installed
#             revision, through a private apt configuration under build/
#             (nothing under /etc/apt changes); the machine's packages are
#             put back as they were
#   trixie    in the Debian roots of make check-distros ($OPMSG_ROOTS/trixie,
#   unstable  $OPMSG_ROOTS/sid, default build/roots/; made when missing): the
#             archive does not serve these releases' sources, so the source
#             is Debian's packaging tree (scripts/fork-source.sh, which
#             --source RELEASE=DIR is passed to). Those trees are older than
#             the roots' packages: installing the fork's is a downgrade,
#             which only a test root may take; the root's packages are put
#             back afterwards
# While fork/debian/RELEASE/ is a placeholder (its series does not exist
# yet), the release is built with a throwaway example series instead
# (scripts/fork-debian-patches.sh --example, a comment), so every step runs;
# the hostile-reply harness then shows stock's behaviour and does not fail.
#
# Work and logs: build/fork-debs/RELEASE/ here, /srv/opmsg-fork-debs/ in a
# root. Ends with each release's "fork-deb ..." line and its times; exit 1
# when a release failed. Runs as root (apt, chroot).
set -euo pipefail

say() { echo "fork-debs: $*"; }
die() { echo "fork-debs: error: $*" >&2; exit 1; }

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
. scripts/lib/apt-source.sh
. scripts/lib/copy-tree.sh

debian_root=fork/debian
sources=()
releases=()
while [ $# -gt 0 ]; do
  case $1 in
    --debian) debian_root=${2:?--debian needs a folder}; shift 2 ;;
    --source) sources+=(--source "${2:?--source needs RELEASE=DIR}"); shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1" ;;
    sid) releases+=(unstable); shift ;;
    *) releases+=("$1"); shift ;;
  esac
done
[ ${#releases[@]} -gt 0 ] || releases=(bookworm)
[ "$(id -u)" -eq 0 ] || die "must run as root (apt-get, dpkg, chroot); try: sudo make fork-debs"

ferretdb=""
for c in "${OPMSG_FERRETDB:-}" "$(command -v ferretdb 2>/dev/null)" \
         "$(command -v go >/dev/null 2>&1 && echo "$(go env GOPATH 2>/dev/null)/bin/ferretdb")"; do
  if [ -n "$c" ] && [ -x "$c" ]; then ferretdb=$(realpath "$c"); break; fi
done
[ -n "$ferretdb" ] || die "FerretDB is not installed (scripts/install-deps.sh installs it)"

# The fork's side of RELEASE: fork/debian/RELEASE/, or, while that is a
# placeholder, the example series made into one (needs the release's
# packaging tree; --source gives it).
fork_side() {
  local rel=$1 dir=$debian_root/$1
  if [ -f "$dir/changelog" ]; then
    echo "$dir"
    return 0
  fi
  [ -f "$dir/PLACEHOLDER" ] || die "$dir is neither generated nor a placeholder: make fork-debian-patches"
  say "$rel: $dir is a placeholder: building with the throwaway example series" >&2
  scripts/fork-debian-patches.sh --example build/fork-debs/example "${sources[@]}" "$rel" >&2
  scripts/fork-debian-patches.sh --series build/fork-debs/example --out build/fork-debs/example-debian \
    "${sources[@]}" "$rel" >&2
  echo "build/fork-debs/example-debian/$rel"
}

summaries=()
status=0
for rel in "${releases[@]}"; do
  say "== $rel"
  t0=$(date +%s)
  case $rel in
    bookworm)
      [ "$(. /etc/os-release && echo "${VERSION_CODENAME:-}")" = bookworm ] ||
        die "bookworm's packages are built and installed on a Debian 12 machine"
      stock=$(dpkg-query -W -f='${source:Version}' libmongoc-1.0-0 2>/dev/null || true)
      [ -n "$stock" ] || die "libmongoc-1.0-0 is not installed: the fork's packages replace the installed ones (make deps)"
      work=build/fork-debs/bookworm
      rm -rf "$work"
      mkdir -p "$work"
      apt_source_dir=$work/apt
      got=$(apt_source mongo-c-driver "$stock" "$work/src") || die "apt-get source mongo-c-driver=$stock failed"
      [ "$got" = "$stock" ] ||
        die "the mirror has mongo-c-driver $got, not the installed $stock: upgrade the machine (apt-get upgrade) first"
      upstream=${stock%-*}
      # The packaging tree without Debian's patches applied, for the example series.
      dpkg-source --skip-patches -x "$work/src/mongo-c-driver_$stock.dsc" "$work/pristine" >/dev/null 2>&1 ||
        die "dpkg-source -x of $work/src/mongo-c-driver_$stock.dsc failed"
      sources=(--source "bookworm=$work/pristine" "${sources[@]}")
      side=$(fork_side bookworm)
      say "bookworm: mongo-c-driver $stock (apt-get source) with $side, prepared in $(( $(date +%s) - t0 )) s"
      rc=0
      OPMSG_FERRETDB=$ferretdb bash scripts/fork-debs-release.sh --release bookworm \
        --source "$work/src/mongo-c-driver-$upstream" --orig "$work/src/mongo-c-driver_$upstream.orig.tar.gz" \
        --debian "$side" --work "$work/work" || rc=$?
      result=$work/work
      ;;
    trixie|unstable)
      suite=$rel
      [ "$rel" = unstable ] && suite=sid
      root=$(scripts/debian-root.sh --path "$suite")
      scripts/debian-root.sh "$suite" >&2 || die "no $suite root (scripts/debian-root.sh $suite)"
      side=$(fork_side "$rel")
      mapfile -t src_args < <(for s in "${sources[@]}"; do
                                case $s in "$rel="*) printf '%s\n' --source "${s#*=}" ;; esac; done)
      base=$(scripts/fork-source.sh "$rel" "${src_args[@]}")
      inside=/srv/opmsg-fork-debs
      work=$root$inside
      rm -rf "$work"
      mkdir -p "$work/source"
      copy_tree "$work/opmsg"
      git -C "$base" archive opmsg-base | tar -x -C "$work/source"
      cp -r "$side" "$work/debian"
      install -m 755 "$ferretdb" "$work/ferretdb"
      say "$rel: Debian's packaging tree $(cd "$work/source" && dpkg-parsechangelog -S Version) with $side," \
          "in the $suite root ($root), prepared in $(( $(date +%s) - t0 )) s"
      rc=0
      scripts/debian-root.sh --exec "$suite" -- env OPMSG_FERRETDB=$inside/ferretdb \
        bash $inside/opmsg/scripts/fork-debs-release.sh --release "$rel" --source $inside/source \
        --debian $inside/debian --work $inside/work --test-root || rc=$?
      result=$work/work
      ;;
    *) die "unknown release $rel (bookworm, trixie, unstable)" ;;
  esac
  if [ -f "$result/result" ] && [ $rc -eq 0 ]; then
    summaries+=("$(cat "$result/result")" "$(cat "$result/times")")
  elif [ -f "$result/result" ]; then
    summaries+=("$(cat "$result/result") (FAILED)" "$(cat "$result/times")")
    status=1
  else
    summaries+=("fork-deb $rel: FAILED before its checks ran (logs: $result/logs)")
    status=1
  fi
  say "$rel: $(( $(date +%s) - t0 )) s in all"
done

echo
printf '%s\n' "${summaries[@]}"
exit $status
