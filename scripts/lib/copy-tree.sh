# shellcheck shell=bash
# Usage: . scripts/lib/copy-tree.sh, then copy_tree DEST
# Sourced: copy_tree DEST copies the working tree of the current directory
# into DEST (emptied first) as git sees it: the files git knows, tracked or
# untracked but not ignored, that exist; outside a git checkout, everything
# but what .gitignore names. No build directories, nothing of .git.
copy_tree() {
  local dest=$1
  rm -rf "$dest"
  mkdir -p "$dest"
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    comm -z -23 <(git ls-files -z -co --exclude-standard | sort -z) \
                <(git ls-files -z -d | sort -z) |
      tar --null -T - -cf - | tar -xf - -C "$dest"
  else
    tar --exclude-vcs --exclude-vcs-ignores --exclude=./build --exclude='./build-*' \
        --exclude=./dist --exclude=node_modules --exclude=__pycache__ -cf - . | tar -xf - -C "$dest"
  fi
}
