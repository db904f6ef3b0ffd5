#!/bin/bash
# The fork's pull requests as patch files (fork/README.md): each folder
# fork/master/K-NAME/ is a `git format-patch` series (0001-*.patch ...) with
# a hand-written 0000-cover-letter.patch, new-tests.txt, changed-tests.txt
# and, when it does not apply on master, a file `base` naming the folder it
# applies on (docs/fork.md says more). Their one source is the
# committed patches; to change them, edit them as branches:
#
# Usage: scripts/fork-patches.sh --edit [--source DIR]
#       build/fork/edit/master: a clone of the pristine tree
#       (scripts/fork-source.sh) with one branch per folder, named after it
#       (1-no-abort, 2-section-rules, ...), made from the committed patches
#       with `git am`, each on its base's branch (or on the tag opmsg-base,
#       master a047e0bc). Edit, commit, `git rebase -i`; a pull request whose
#       base changed must be rebased on it (git rebase --onto 1-no-abort
#       OLD-TIP 2-section-rules).
#   scripts/fork-patches.sh [--source DIR]
#       writes each folder's 0001-*.patch ... again from its branch there
#       (the commits after its base), leaving 0000-cover-letter.patch and the
#       lists alone (but for the cover letter's "[PATCH 0/N]" count, and its
#       From: and Date: when FORK_AUTHOR or FORK_DATE is given).
#   scripts/fork-patches.sh --check [--source DIR] [TARGET...]
#       (CI, `make fork-patches-check`; no compiling): every pull request
#       folder has its cover letter (with the right count) and applies with
#       `git am` on its base, and exporting what it gives again, with the
#       identity and dates its patches carry, gives the same files byte for
#       byte; the Debian ports fork/trixie/K-NAME/ and fork/bookworm/K-NAME/
#       the same way on their trees (scripts/fork-source.sh TARGET, Debian's
#       patches applied).
#       TARGET: master, trixie, bookworm (default: every folder of fork/ but
#       debian/).
#   --series DIR    master's folder (default fork/master; for a trial)
#   --edit-dir DIR  the edit repository (default build/fork/edit/master)
#
# The author and date of the exported commits:
#   FORK_AUTHOR="Name <mail>"  every commit's author (default: each commit
#                              keeps its own: the one its committed patch
#                              carries, or whoever made a new commit)
#   FORK_DATE=DATE             every commit's author date, any date git
#                              reads (2026-12-01T00:00:00Z); default: each
#                              commit keeps its own
# Whoever submits the pull requests sets both, e.g.
#   make fork-patches FORK_AUTHOR="Ada Lovelace <ada@example.org>" FORK_DATE=now
#
# The export is the same bytes on every machine: git's own configuration is
# left out, and every option that changes format-patch's output is fixed
# (--zero-commit, no signature, 12-digit index lines, myers diffs, no rename
# detection, --stat=80).
set -euo pipefail

say() { echo "fork-patches: $*" >&2; }
die() { echo "fork-patches: error: $*" >&2; exit 1; }

top=$(cd "$(dirname "$0")/.." && pwd)
mode='write'
source_args=()
master_dir=$top/fork/master
edit_dir=$top/build/fork/edit/master
targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --check) mode=check; shift ;;
    --edit) mode=edit; shift ;;
    --source) source_args=(--source "${2:?--source needs a folder}"); shift 2 ;;
    --series) master_dir=$(realpath -m -- "${2:?--series needs a folder}"); shift 2 ;;
    --edit-dir) edit_dir=$(realpath -m -- "${2:?--edit-dir needs a folder}"); shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) targets+=("$1"); shift ;;
  esac
done
if [ ${#targets[@]} -eq 0 ]; then
  if [ $mode = check ]; then
    for d in "$top"/fork/*/; do
      d=$(basename "$d")
      [ "$d" = debian ] || targets+=("$d")
    done
  else
    targets=(master)
  fi
fi
[ $mode = check ] || [ "${targets[*]}" = master ] ||
  die "only master's pull requests are exported and edited here; the ports in fork/trixie/ and fork/bookworm/ are checked (--check) and exported with the same format-patch options"

# Git as the same tool everywhere: no user or system configuration.
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null GIT_CONFIG_NOSYSTEM=1
export TZ=UTC LC_ALL=C
# Who applies (git am): the committer, which the export does not show.
export GIT_COMMITTER_NAME="fork-patches" GIT_COMMITTER_EMAIL="fork-patches@opmsg.invalid"

# The pull request folders of fork/TARGET/, in their numbers' order.
pr_folders() {  # SERIES-DIR
  find "$1" -mindepth 1 -maxdepth 1 -type d -name '[0-9]*-*' -printf '%f\n' | sort -V
}
numbered() {  # FOLDER -> its patches but the cover letter, in order
  find "$1" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' ! -name '0000-*' | sort
}
# A folder's base: "master", or another folder's name (its file `base`: one
# line, a folder, its number, or "Base: FOLDER").
base_of() {  # SERIES-DIR NAME
  local b=master f
  if [ -f "$1/$2/base" ]; then
    b=$(sed 's/#.*//; s/^[[:space:]]*[Bb]ase:[[:space:]]*//' "$1/$2/base" | awk 'NF {print $1; exit}')
    b=${b:-master}
  fi
  if [ "$b" != master ]; then
    for f in $(pr_folders "$1"); do
      if [ "$f" = "$b" ] || [ "${f%%-*}" = "${b#PR}" ]; then echo "$f"; return 0; fi
    done
    die "$2/base names '$b': no such folder"
  fi
  echo master
}
base_ref() {  # SERIES-DIR NAME -> the ref its branch starts from
  local b
  b=$(base_of "$1" "$2")
  if [ "$b" = master ]; then echo opmsg-base; else echo "refs/heads/$b"; fi
}

# The branches of REPO as the patch folder they give, into OUT/NAME/.
# FORK_AUTHOR and FORK_DATE, when set, replace each commit's author and
# date (the commits are made again on the same base, with the same trees
# and messages).
export_prs() {  # REPO SERIES-DIR OUT
  local repo=$1 sdir=$2 out=$3 name base tip c new msg an ae ad
  for name in $(pr_folders "$sdir"); do
    git -C "$repo" rev-parse -q --verify "refs/heads/$name" >/dev/null || die "no branch $name in $repo"
    base=$(base_ref "$sdir" "$name")
    tip=$(git -C "$repo" rev-parse "refs/heads/$name")
    git -C "$repo" merge-base --is-ancestor "$base" "$tip" ||
      die "branch $name is not on ${base#refs/heads/}: rebase it (git rebase --onto ${base#refs/heads/} OLD-BASE $name)"
    if [ -n "${FORK_AUTHOR:-}" ] || [ -n "${FORK_DATE:-}" ]; then
      if [ -n "${FORK_AUTHOR:-}" ]; then
        case $FORK_AUTHOR in *' <'*'>') ;; *) die "FORK_AUTHOR is \"Name <mail>\", not '$FORK_AUTHOR'" ;; esac
      fi
      new=$(git -C "$repo" rev-parse "$base^{commit}")
      for c in $(git -C "$repo" rev-list --reverse "$base..$tip"); do
        an=$(git -C "$repo" log -1 --format=%an "$c")
        ae=$(git -C "$repo" log -1 --format=%ae "$c")
        ad=$(git -C "$repo" log -1 --format=%aI "$c")
        if [ -n "${FORK_AUTHOR:-}" ]; then
          an=${FORK_AUTHOR% <*}
          ae=${FORK_AUTHOR##*<}
          ae=${ae%>}
        fi
        [ -z "${FORK_DATE:-}" ] || ad=$FORK_DATE
        msg=$(git -C "$repo" log -1 --format=%B "$c")
        new=$(GIT_AUTHOR_NAME=$an GIT_AUTHOR_EMAIL=$ae GIT_AUTHOR_DATE=$ad GIT_COMMITTER_DATE=$ad \
              git -C "$repo" commit-tree "$c^{tree}" -p "$new" -m "$msg") ||
          die "FORK_DATE '${FORK_DATE:-}' is not a date git reads"
      done
      tip=$new
    fi
    mkdir -p "$out/$name"
    git -C "$repo" -c core.abbrev=12 -c diff.algorithm=myers -c diff.renames=false -c diff.noprefix=false \
      -c diff.mnemonicPrefix=false -c diff.relative=false -c format.coverLetter=false \
      format-patch -q --zero-commit --no-signature --stat=80 --no-color --no-cover-letter \
      -o "$out/$name" "$base..$tip" >/dev/null
    [ -n "$(numbered "$out/$name")" ] || die "branch $name has no commit after ${base#refs/heads/}"
  done
}

# The cover letter's "[PATCH 0/N]", and, when FORK_AUTHOR or FORK_DATE is
# given, its From: and Date: as the first patch has them.
cover_fix() {  # FOLDER N
  local cl=$1/0000-cover-letter.patch first line
  [ -f "$cl" ] || { say "NOTE: ${1#"$top"/} has no 0000-cover-letter.patch (write one by hand)"; return 0; }
  sed -i -E "0,/^Subject: \[PATCH 0\/[0-9]+\]/s//Subject: [PATCH 0\/$2]/" "$cl"
  first=$(numbered "$1" | head -n 1)
  for h in From Date; do
    if { [ "$h" = From ] && [ -n "${FORK_AUTHOR:-}" ]; } || { [ "$h" = Date ] && [ -n "${FORK_DATE:-}" ]; }; then
      line=$(grep -m 1 "^$h: " "$first")
      HDR=$h LINE=$line python3 -c '
import os, sys
p, h, line = sys.argv[1], os.environ["HDR"], os.environ["LINE"]
out, done = [], False
for l in open(p, encoding="utf-8", newline=""):
    if not done and l.startswith(h + ": "):
        l = line + "\n"; done = True
    out.append(l)
open(p, "w", encoding="utf-8", newline="").write("".join(out))' "$cl"
    fi
  done
}

pristine() {  # TARGET -> the pristine tree
  "$top/scripts/fork-source.sh" "$1" "${source_args[@]}"
}

# A clone of the pristine tree with one branch per folder, from its patches.
applied_clone() {  # TARGET DIR SERIES-DIR: fails (saying why) when a folder does not apply
  local target=$1 dir=$2 sdir=$3 name status=0
  git clone -q "$(pristine "$target")" "$dir"
  git -C "$dir" fetch -q origin "+refs/tags/*:refs/tags/*"
  for name in $(pr_folders "$sdir"); do
    local base
    base=$(base_ref "$sdir" "$name")
    if ! git -C "$dir" rev-parse -q --verify "$base" >/dev/null; then
      say "${sdir#"$top"/}/$name: its base ${base#refs/heads/} did not apply"
      status=1
      continue
    fi
    git -C "$dir" checkout -q -b "$name" "$base"
    local -a ps
    mapfile -t ps < <(numbered "$sdir/$name")
    [ ${#ps[@]} -gt 0 ] || { say "${sdir#"$top"/}/$name: no patches"; status=1; continue; }
    if ! git -C "$dir" am -q --keep-cr --committer-date-is-author-date "${ps[@]}" >"$dir.am.log" 2>&1; then
      git -C "$dir" am --abort >/dev/null 2>&1 || true
      git -C "$dir" checkout -q --detach opmsg-base
      git -C "$dir" branch -q -D "$name"
      say "${sdir#"$top"/}/$name does not apply on ${base#refs/heads/} with git am:"
      sed 's/^/  /' "$dir.am.log" >&2
      status=1
    fi
  done
  rm -f "$dir.am.log"
  git -C "$dir" checkout -q --detach opmsg-base
  return $status
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

case $mode in
  edit)
    sdir=$master_dir
    [ -n "$(pr_folders "$sdir")" ] || die "no pull request folders in fork/master/"
    [ ! -e "$edit_dir" ] || die "${edit_dir#"$top"/} exists: edit there, or remove it first"
    mkdir -p "$(dirname "$edit_dir")"
    applied_clone master "$edit_dir" "$sdir" || { rm -rf "$edit_dir"; die "the committed patches do not apply"; }
    for name in $(pr_folders "$sdir"); do
      say "branch $name: $(git -C "$edit_dir" rev-list --count "$(base_ref "$sdir" "$name")..$name") commits on $(base_of "$sdir" "$name")"
    done
    say "the pull requests are branches of ${edit_dir#"$top"/}: edit, commit, then run 'make fork-patches'"
    ;;

  write)
    sdir=$master_dir
    [ -d "$edit_dir/.git" ] || die "no ${edit_dir#"$top"/}: run 'make fork-edit' first, then edit the branches there"
    export_prs "$edit_dir" "$sdir" "$work/export"
    for name in $(pr_folders "$sdir"); do
      find "$sdir/$name" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' ! -name '0000-*' -delete
      cp "$work/export/$name"/*.patch "$sdir/$name/"
      n=$(numbered "$sdir/$name" | wc -l)
      cover_fix "$sdir/$name" "$n"
      say "${sdir#"$top"/}/$name: $n patches written from branch $name"
    done
    ;;

  check)
    status=0
    for target in "${targets[@]}"; do
      sdir=$top/fork/$target
      [ "$target" != master ] || sdir=$master_dir
      [ -d "$sdir" ] || die "no folder fork/$target"
      if [ -n "$(pr_folders "$sdir")" ]; then
        # Pull requests: their cover letters, their bases, git am, the export.
        for name in $(pr_folders "$sdir"); do
          n=$(numbered "$sdir/$name" | wc -l)
          cl=$sdir/$name/0000-cover-letter.patch
          if [ ! -f "$cl" ]; then
            say "${sdir#"$top"/}/$name: no 0000-cover-letter.patch"; status=1
          elif ! grep -q "^Subject: \[PATCH 0/$n\]" "$cl"; then
            say "${sdir#"$top"/}/$name/0000-cover-letter.patch: its Subject is not \"[PATCH 0/$n] ...\" ($n patches)"; status=1
          fi
          [ -f "$sdir/$name/new-tests.txt" ] || { say "${sdir#"$top"/}/$name: no new-tests.txt"; status=1; }
          [ -f "$sdir/$name/changed-tests.txt" ] || { say "${sdir#"$top"/}/$name: no changed-tests.txt"; status=1; }
        done
        if ! applied_clone "$target" "$work/$target" "$sdir"; then
          status=1
          continue
        fi
        export_prs "$work/$target" "$sdir" "$work/export-$target"
        for name in $(pr_folders "$sdir"); do
          a=$(cd "$sdir/$name" && numbered . | sed 's|^\./||')
          b=$(cd "$work/export-$target/$name" && ls)
          if [ "$a" != "$b" ]; then
            say "${sdir#"$top"/}/$name: the patch files are not named as an export names them:"
            diff <(echo "$a") <(echo "$b") | sed 's/^/  /' >&2 || true
            status=1
            continue
          fi
          bad=0
          for f in $a; do
            if ! cmp -s "$sdir/$name/$f" "$work/export-$target/$name/$f"; then
              say "${sdir#"$top"/}/$name/$f differs from its export:"
              diff -u "$sdir/$name/$f" "$work/export-$target/$name/$f" | head -n 20 >&2 || true
              bad=1
            fi
          done
          if [ $bad -eq 0 ]; then
            say "${sdir#"$top"/}/$name: $(echo "$a" | wc -l) patches apply on $(base_of "$sdir" "$name") and are their own export"
          else
            say "${sdir#"$top"/}/$name: run 'make fork-edit' and 'make fork-patches' (or export with the options of scripts/fork-patches.sh)"
            status=1
          fi
        done
      else
        say "${sdir#"$top"/}: no pull request folders (K-NAME/0001-*.patch)"
        status=1
      fi
    done
    [ $status -eq 0 ] || die "the committed patches are not what they should be (above)"
    ;;
esac
