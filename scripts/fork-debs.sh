#!/bin/bash
# Debian's mongo-c-driver packages with the fork's patches: `make fork-debs`
# and `make check-fork-debs` (mk/fork-debs.mk, docs/fork.md, "Debian packages").
#
#   scripts/fork-debs.sh [--source RELEASE=DIR]... [RELEASE...]
#
# RELEASE is bookworm, trixie or unstable (sid); default bookworm.
# scripts/fork-debs-release.sh builds each: from `apt-get source` of exactly
# the revision the system runs when the archive serves it (INSTALLED+opmsgN,
# an upgrade), else from Debian's packaging tree (scripts/fork-source.sh,
# --source RELEASE=DIR is passed to it: TREE+opmsgN, a test build that only a
# test system should install); the fork's quilt patches, series lines and
# changelog entry are made at build time from fork/master/, fork/trixie/,
# fork/bookworm/ (scripts/fork-debian-patches.sh); the packages go into the
# apt repository build/fork-debs/apt/ (pool/NAME/, dists/NAME/main/binary-amd64/)
# and are installed from it, checked and reverted:
#   bookworm  on this machine, which must be Debian 12
#   trixie    in the Debian roots of make check-distros ($OPMSG_ROOTS/trixie,
#   unstable  $OPMSG_ROOTS/sid, default build/roots/; made when missing);
#             the repository is written in the root and copied here
#
# Work and logs: build/fork-debs/RELEASE/ here, /srv/opmsg-fork-debs/ in a
# root. Ends with each release's "fork-deb ..." line and its times; exit 1
# when a release failed. Runs as root (apt, chroot).
set -euo pipefail

say() { echo "fork-debs: $*"; }
die() { echo "fork-debs: error: $*" >&2; exit 1; }

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
. scripts/lib/copy-tree.sh

sources=()
releases=()
while [ $# -gt 0 ]; do
  case $1 in
    --source) sources+=("${2:?--source needs RELEASE=DIR}"); shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1" ;;
    sid) releases+=(unstable); shift ;;
    *) releases+=("$1"); shift ;;
  esac
done
[ ${#releases[@]} -gt 0 ] || releases=(bookworm)
[ "$(id -u)" -eq 0 ] || die "must run as root (apt-get, dpkg, chroot); try: sudo make fork-debs"
command -v dpkg-scanpackages >/dev/null || die "dpkg-scanpackages is missing (apt-get install dpkg-dev)"

ferretdb=""
for c in "${OPMSG_FERRETDB:-}" "$(command -v ferretdb 2>/dev/null)" \
         "$(command -v go >/dev/null 2>&1 && echo "$(go env GOPATH 2>/dev/null)/bin/ferretdb")"; do
  if [ -n "$c" ] && [ -x "$c" ]; then ferretdb=$(realpath "$c"); break; fi
done
[ -n "$ferretdb" ] || die "FerretDB is not installed (scripts/install-deps.sh installs it)"

# Debian's packaging tree of RELEASE (Debian's patches unapplied) in DEST:
# the fallback source.
packaging_tree() {  # RELEASE DEST
  local args=() s base
  for s in "${sources[@]}"; do
    case $s in "$1="*) args+=(--source "${s#*=}") ;; esac
  done
  base=$(scripts/fork-source.sh "$1" "${args[@]}") || die "no $1 packaging tree (scripts/fork-source.sh $1)"
  rm -rf "$2"
  mkdir -p "$2"
  git -C "$base" archive opmsg-base | tar -x -C "$2"
}

apt_repo=build/fork-debs/apt
mkdir -p "$apt_repo"
summaries=()
status=0
for rel in "${releases[@]}"; do
  say "== $rel"
  t0=$(date +%s)
  case $rel in
    bookworm)
      [ "$(. /etc/os-release && echo "${VERSION_CODENAME:-}")" = bookworm ] ||
        die "bookworm's packages are built and installed on a Debian 12 machine"
      work=build/fork-debs/bookworm
      rm -rf "$work"
      mkdir -p "$work"
      packaging_tree bookworm "$work/tree"
      rc=0
      OPMSG_FERRETDB=$ferretdb bash scripts/fork-debs-release.sh --release bookworm \
        --fallback "$work/tree" --apt "$apt_repo" --work "$work/work" || rc=$?
      result=$work/work
      ;;
    trixie|unstable)
      suite=$rel
      [ "$rel" = unstable ] && suite=sid
      root=$(scripts/debian-root.sh --path "$suite")
      scripts/debian-root.sh "$suite" >&2 || die "no $suite root (scripts/debian-root.sh $suite)"
      inside=/srv/opmsg-fork-debs
      work=$root$inside
      rm -rf "$work"
      mkdir -p "$work"
      copy_tree "$work/opmsg"
      packaging_tree "$rel" "$work/tree"
      install -m 755 "$ferretdb" "$work/ferretdb"
      say "$rel: in the $suite root ($root), prepared in $(( $(date +%s) - t0 )) s"
      rc=0
      scripts/debian-root.sh --exec "$suite" -- env OPMSG_FERRETDB=$inside/ferretdb \
        ${FORK_DEBS_REVISION:+FORK_DEBS_REVISION=$FORK_DEBS_REVISION} \
        bash $inside/opmsg/scripts/fork-debs-release.sh --release "$rel" --fallback $inside/tree \
        --apt $inside/apt --work $inside/work --test-root || rc=$?
      result=$work/work
      # The root's part of the repository, into build/fork-debs/apt/.
      if [ -d "$work/apt/dists/$suite" ]; then
        rm -rf "$apt_repo/pool/$suite" "$apt_repo/dists/$suite"
        mkdir -p "$apt_repo/pool" "$apt_repo/dists"
        cp -r "$work/apt/pool/$suite" "$apt_repo/pool/"
        cp -r "$work/apt/dists/$suite" "$apt_repo/dists/"
      fi
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
