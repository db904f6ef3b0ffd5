#!/bin/bash
# The fork's patch series (fork/TARGET/*.patch), rebuilt from its two
# sources of truth: the hand-written hunks of the patches themselves, and
# src/ for the files fork/generate.py generates (fork/README.md).
#
#   scripts/fork-patches.sh [TARGET]            rebuild fork/TARGET/*.patch
#   scripts/fork-patches.sh [TARGET] --check    rebuild into a temporary
#                                               folder; fail if it differs
#   scripts/fork-patches.sh [TARGET] --edit     the series as a branch to
#                                               edit, in build/fork/edit/TARGET
#
# TARGET is master (the default). Without --check, the series comes from
# build/fork/edit/TARGET when that exists (the branch --edit made, with the
# developer's commits), else from the committed patches. --check always
# takes the committed patches. --source DIR is passed to fork-source.sh.
#
# How: the pristine tree (scripts/fork-source.sh), the series applied with
# `git am`, then commit by commit the generated files of that commit's
# stage (fork/TARGET/generate.json) written over what the commit holds, and
# the result exported with `git format-patch` under fixed dates, identity
# and options, so that the same inputs always give the same bytes.
set -euo pipefail

say() { echo "fork-patches: $*" >&2; }
die() { echo "fork-patches: error: $*" >&2; exit 1; }

top=$(cd "$(dirname "$0")/.." && pwd)
target=master
mode=write
source_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --check) mode=check; shift ;;
    --edit) mode=edit; shift ;;
    --source) source_args=(--source "${2:?--source needs a folder}"); shift 2 ;;
    -*) die "unknown option $1" ;;
    *) target=$1; shift ;;
  esac
done

series_dir=$top/fork/$target
manifest=$series_dir/generate.json
[ -f "$manifest" ] || die "no manifest $manifest"
edit_dir=$top/build/fork/edit/$target

# Git as the same tool everywhere: no user or system configuration, fixed
# identity and dates.
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME="opmsg fork" GIT_AUTHOR_EMAIL="fork@opmsg.invalid"
export GIT_COMMITTER_NAME="opmsg fork" GIT_COMMITTER_EMAIL="fork@opmsg.invalid"
export GIT_AUTHOR_DATE="2026-12-01T00:00:00Z" GIT_COMMITTER_DATE="2026-12-01T00:00:00Z"
export TZ=UTC LC_ALL=C

pristine=$("$top/scripts/fork-source.sh" "$target" "${source_args[@]}")
# The target's clang-format series (its manifest's "clang_format"; master's
# 20.1.8 when it names none), run with the target tree's own .clang-format.
pin=$(python3 "$top/fork/generate.py" "$target" --clang-format-pin)
clang_format=$("$top/scripts/clang-format.sh" --pin "$pin")

# A clone of the pristine tree at its base, with the committed series applied.
applied_clone() {
  local dir=$1
  git clone -q "$pristine" "$dir"
  git -C "$dir" checkout -q -b series opmsg-series-base
  local patches=("$series_dir"/*.patch)
  if [ -e "${patches[0]}" ]; then
    git -C "$dir" am -q --keep-cr "${patches[@]}" || die "the committed series does not apply to the pristine tree"
  fi
}

if [ $mode = edit ]; then
  [ ! -e "$edit_dir" ] || die "$edit_dir exists: edit there, or remove it first"
  mkdir -p "$(dirname "$edit_dir")"
  applied_clone "$edit_dir"
  git -C "$edit_dir" config user.name "$GIT_AUTHOR_NAME"
  git -C "$edit_dir" config user.email "$GIT_AUTHOR_EMAIL"
  say "the series is branch 'series' of $edit_dir ($(git -C "$edit_dir" rev-list --count opmsg-series-base..HEAD) commits on opmsg-series-base)"
  say "edit, commit (git rebase -i opmsg-series-base to change a commit), then run 'make fork-patches'"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The commits to rebuild.
src=$work/src
if [ $mode = write ] && [ -d "$edit_dir/.git" ]; then
  say "taking the series from the branch in ${edit_dir#$top/} (remove it to rebuild from the committed patches)"
  git clone -q "$pristine" "$src"
  git -C "$src" fetch -q "$edit_dir" HEAD
  git -C "$src" checkout -q -B series FETCH_HEAD
  git -C "$src" merge-base --is-ancestor opmsg-series-base HEAD || die "the edit branch is not based on the pristine tree"
else
  applied_clone "$src"
fi
commits=($(git -C "$src" rev-list --reverse opmsg-series-base..HEAD))
stages=$(python3 "$top/fork/generate.py" "$target" --count)
[ "${#commits[@]}" -eq "$stages" ] ||
  die "the series has ${#commits[@]} commits, the manifest $stages: update fork/$target/generate.json"

# Rebuild it commit by commit on a fresh branch.
out=$work/tree
git clone -q "$pristine" "$out"
git -C "$out" checkout -q -b series opmsg-series-base
git -C "$out" fetch -q "$src" HEAD
generated=$(python3 "$top/fork/generate.py" "$target" --paths)
i=0
for c in "${commits[@]}"; do
  i=$((i + 1))
  subject=$(git -C "$src" log -1 --format=%s "$c")
  want=$(python3 "$top/fork/generate.py" "$target" --subject "$i")
  [ "$subject" = "$want" ] || die "commit $i is '$subject'; the manifest's stage $i is '$want'"
  # The commit's tree as it is, then its generated files from src/.
  git -C "$out" read-tree -u --reset "$c"
  for p in $generated; do
    rm -f "$out/$p"
  done
  python3 "$top/fork/generate.py" "$target" --stage "$i" --out "$out" \
    --clang-format "$clang_format" --style "$out/.clang-format" >/dev/null ||
    die "generating stage $i failed"
  git -C "$out" add -A
  tree=$(git -C "$out" write-tree)
  msg=$(git -C "$src" log -1 --format=%B "$c")
  new=$(git -C "$out" commit-tree "$tree" -p HEAD -m "$msg")
  git -C "$out" reset -q --hard "$new"
done

# Export. Every option that changes format-patch's output is fixed here.
export_dir=$work/export
git -C "$out" -c core.abbrev=12 -c diff.algorithm=myers -c diff.renames=false -c diff.noprefix=false \
  format-patch -q --zero-commit --no-signature --no-binary --stat=80 --no-color \
  -o "$export_dir" opmsg-series-base..HEAD >/dev/null

if [ $mode = check ]; then
  if ! diff -r -q <(cd "$export_dir" && ls) <(cd "$series_dir" && ls *.patch) >/dev/null; then
    die "fork/$target/: the patch files differ from a regeneration (run 'make fork-patches')"
  fi
  bad=0
  for f in "$export_dir"/*.patch; do
    if ! cmp -s "$f" "$series_dir/$(basename "$f")"; then
      say "fork/$target/$(basename "$f") differs from a regeneration:"
      diff -u "$series_dir/$(basename "$f")" "$f" | head -20 >&2 || true
      bad=1
    fi
  done
  [ $bad -eq 0 ] || die "the committed series is not what src/ and its own hunks give (run 'make fork-patches')"
  say "fork/$target: ${#commits[@]} patches, identical to a regeneration"
  exit 0
fi

rm -f "$series_dir"/*.patch
cp "$export_dir"/*.patch "$series_dir"/
say "fork/$target: ${#commits[@]} patches written"
