#!/bin/bash
# Debian's mongo-c-driver with the fork's patches, one release and track
# (make fork-debs; docs/debian.md). Runs as root.
#
# Usage: scripts/fork-debs.sh [RELEASE [TRACK]]   default: bookworm fixes
#
# Debian's newest served source (apt-get source, a private apt configuration
# on the Debian mirror this machine's apt uses; where the archive serves
# none, Debian's packaging tree FORK_DEBS_TREE, default ../shared/upstream's,
# as a test build), fork/debian/RELEASE/TRACK/'s patches and changelog entry
# at Debian's next revision (dch): the stable-update submission (its
# debdiff); the same with the local suffix ~opmsgN (FORK_DEBS_REVISION,
# default 1), debian/tests and a local Maintainer: the local packages, built
# with sbuild (unshare mode, mmdebstrap tarball in build/sbuild/), checked
# (lintian --fail-on error, abidiff and debdiff against the archive's
# binaries), published with reprepro in the signed repository $OPMSG_APT
# (default /srv/opmsg-apt; database and key in $OPMSG_APT_STATE, default
# /var/lib/opmsg/apt; suite RELEASE-TRACK, or RELEASE-TRACK-test for a test
# build), with opmsg's own packages (make package's dist/) in the host
# release's suites, installed from it in a clean testbed and tested there
# (autopkgtest). The host's package state is compared before and after.
# Ends with the fork-deb line (docs/debian.md); exit 1 when a check failed.
set -euo pipefail
export LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive
cd "$(dirname "$0")/.."
top=$PWD rel=${1:-bookworm} track=${2:-fixes} n=${FORK_DEBS_REVISION:-1}
repo=${OPMSG_APT:-/srv/opmsg-apt} state=${OPMSG_APT_STATE:-/var/lib/opmsg/apt}
fork=fork/debian/$rel/$track work=build/fork-debs/$rel-$track tar=build/sbuild/$rel-amd64.tar.zst
die() { echo "fork-debs: $*" >&2; exit 1; }
step() { echo "fork-debs: $1 $(($(date +%s) - t0)) s"; t0=$(date +%s); }
[ "$(id -u)" -eq 0 ] || die "needs root (sbuild's unshare mode, reprepro under $state)"
[ -d "$fork" ] || die "no $fork"
rm -rf "$work" && mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial" build/sbuild
t0=$(date +%s) start=$t0
dpkg-query -W -f '${Package}:${Architecture} ${Version} ${db:Status-Abbrev}\n' >"$work/host-before"

# Debian's newest served revision: a private apt configuration on the
# mirror this machine's apt uses (nothing under /etc/apt changes).
. scripts/lib/host-uri.sh
hostrel=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
mirror=${OPMSG_DEBIAN_MIRROR:-$(host_uri "$hostrel")} security=$(host_uri "$hostrel-security")
[ -n "$mirror" ] || die "no Debian mirror in this machine's apt sources; set OPMSG_DEBIAN_MIRROR"
suites="$rel $rel-updates $rel-proposed-updates" && [ "$rel" != sid ] || suites=sid
mkdir -p "$work/apt/parts"
printf 'Types: deb deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n' \
  "$mirror" "$suites" >"$work/apt/parts/debian.sources"
[ -z "$security" ] || [ "$rel" = sid ] || printf 'Types: deb deb-src\nURIs: %s\nSuites: %s-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
  "$security" "$rel" >>"$work/apt/parts/debian.sources"
apt=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$top/$work/apt/parts" -o Acquire::Check-Valid-Until=false
  -o "Dir::State::Lists=$top/$work/apt/lists" -o "Dir::Cache=$top/$work/apt/cache"
  -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null -o APT::Sandbox::User=root)
# (A suite the mirror lacks, e.g. an empty proposed-updates, is not an error.)
apt-get "${apt[@]}" -q update >"$work/apt.log" 2>&1 || true
if ! (cd "$work" && apt-get "${apt[@]}" source mongo-c-driver) >>"$work/apt.log" 2>&1; then
  # Indexed but not served (trixie and sid here): Debian's packaging tree,
  # a test build. Its orig tarball is the tree without debian/, made here.
  branch=$rel && [ "$rel" != sid ] || branch=unstable
  tree=${FORK_DEBS_TREE:-$(ls ../shared/upstream/mongo-c-driver-debian-"$branch"-*.tar.xz 2>/dev/null | head -n 1)}
  [ -n "$tree" ] || die "the archive serves no mongo-c-driver source for $rel (apt.log) and no tree is given (FORK_DEBS_TREE)"
  rm -rf "$work/tree" && mkdir "$work/tree"
  if [ -d "$tree" ]; then cp -a "$tree" "$work/tree/src"; else tar -xJf "$tree" -C "$work/tree" && mv "$work"/tree/* "$work/tree/src"; fi
  v=$(dpkg-parsechangelog -l "$work/tree/src/debian/changelog" -S Version)
  tar --sort=name --mtime=@"$(dpkg-parsechangelog -l "$work/tree/src/debian/changelog" -S Timestamp)" --owner=0 --group=0 \
    --numeric-owner --exclude=./debian --exclude=./.git -C "$work/tree/src" --transform "s,^\.,mongo-c-driver-${v%-*}," -cf - . |
    gzip -n >"$work/mongo-c-driver_${v%-*}.orig.tar.gz"
  ln -s ../mongo-c-driver_"${v%-*}".orig.tar.gz "$work/tree/" && (cd "$work/tree" && dpkg-source -b src >/dev/null) && mv "$work"/tree/*.d* "$work/"
  echo "fork-debs: the archive serves no source for $rel: Debian's packaging tree ${tree##*/} ($v), a test build" | tee -a "$work/apt.log"
fi
dsc=$(ls "$work"/mongo-c-driver_*.dsc) && served=${dsc##*_} && served=${served%.dsc}
# Debian's next revision: the next stable update, or (sid) the next upload.
case $rel in bookworm) u=12 ;; trixie) u=13 ;; *) u= ;; esac
if [ -n "$u" ]; then next=$(echo "$served" | perl -pe "s/(\\+deb\\d+u)(\\d+)\$/\$1.(\$2+1)/e; s/^([^+]*)\$/\$1+deb${u}u1/")
else next=$(echo "$served" | perl -pe 's/-(\d+)$/"-".($1+1)/e'); fi
local_v=$next~opmsg$n && [ "$track" = fixes ] || local_v=$local_v+$track
# The archive's binaries of the release (the host's installed ones when it
# is the host's release): the local build upgrades them, or is a test build.
archive=$(apt-cache "${apt[@]}" policy libmongoc-dev | sed -n 's/^  Candidate: //p')
installed=$archive && [ "$rel" != "$hostrel" ] || installed=$(dpkg-query -W -f '${Version}' libmongoc-dev 2>/dev/null || echo "$archive")
dpkg --compare-versions "$local_v" gt "$served" && dpkg --compare-versions "$local_v" lt "$next" ||
  die "$local_v does not sort between $served and $next"
upgrade=yes suite=$rel-$track
dpkg --compare-versions "$local_v" gt "$archive" && dpkg --compare-versions "$local_v" gt "$installed" || upgrade=test-build suite=$rel-$track-test
step "source $served (archive $archive, installed $installed), submission $next, local $local_v in $suite:"

# The submission: Debian's tree, the patches, dch at the next revision.
sub=$work/submission/mongo-c-driver-${served%%-*} loc=$work/local/mongo-c-driver-${served%%-*}
mkdir -p "$work/submission" "$work/local"
ln -s ../mongo-c-driver_${served%%-*}.orig.tar.gz "$work/submission/" && ln -s ../mongo-c-driver_${served%%-*}.orig.tar.gz "$work/local/"
dpkg-source --no-check -x "$dsc" "$sub" >/dev/null 2>&1
# The track's patches: its own 000N_ files, or (the features track) those
# its "patches" file lists, numbered after Debian's last.
if [ -f "$fork/patches" ]; then
  i=$(ls "$sub/debian/patches" | sed -n 's/^\([0-9]\{4\}\)_.*/\1/p' | sort -n | tail -n 1)
  grep -v '^#' "$fork/patches" | while read -r p; do
    i=$((10#$i + 1)) && name=$(printf '%04d_%s' "$i" "${p##*/[0-9][0-9][0-9][0-9]-}")
    cp "$p" "$sub/debian/patches/$name" && echo "$name" >>"$sub/debian/patches/series"
  done
else
  cp "$fork"/0*.patch "$sub/debian/patches/" && (cd "$fork" && ls 0*.patch) >>"$sub/debian/patches/series"
fi
cp -a "$sub" "$loc"
export DEBFULLNAME="mongo-c-driver contributor" DEBEMAIL=contributor@example.invalid
entry() {  # TREE VERSION DISTRIBUTION [ITEM]: dch, the fork's items then ITEM
  local first=-v$2
  { grep -v '^#' "$fork/changelog"; [ -z "${4:-}" ] || echo "$4"; } | while read -r item; do
    (cd "$1" && dch "$first" -D "$3" --force-distribution -u medium "$item") 2>>"$work/dch.log"
    first=-a
  done
}
entry "$sub" "$next" "$rel"
(cd "$work/submission" && dpkg-source -b "${sub##*/}" >/dev/null)
debdiff "$dsc" "$work/submission/mongo-c-driver_$next.dsc" >"$work/submission.debdiff" 2>/dev/null || true
changed=$(filterdiff -i '*/debian/patches/0*' "$work/submission.debdiff" | grep -c '^+[-+][^-+]' || true)

# The local packages: the local suffix, debian/tests, our Maintainer.
mkdir -p "$loc/debian/tests" && cp packaging/debian/tests/* "$fork/reply-cases" tests/dropin/hostile_server.py tests/encryption/enc-client.c "$loc/debian/tests/"
sed -i 's/^Maintainer: .*/Maintainer: opmsg project <opmsg@example.invalid>/' "$loc/debian/control"
entry "$loc" "$local_v" "$rel" "Local build (opmsg project, not Debian's): $next's patches, with debian/tests and the project as Maintainer"
(cd "$work/local" && dpkg-source -b "${loc##*/}" >/dev/null)
step "sources"

# The clean build.
if [ ! -f "$tar" ] || [ -n "$(find "$tar" -mtime +7)" ]; then
  # (mmdebstrap picks the format from the name: .tar.zst last.)
  mirrors=("deb $mirror $rel main")
  [ "$rel" = sid ] || mirrors+=("deb $mirror $rel-updates main" ${security:+"deb $security $rel-security main"})
  mmdebstrap --mode=unshare --variant=buildd --skip=output/mknod --aptopt='Acquire::Check-Valid-Until "false"' \
    "$rel" "$tar.new.tar.zst" "${mirrors[@]}" >"$work/mmdebstrap.log" 2>&1 && mv "$tar.new.tar.zst" "$tar"
  step "mmdebstrap $tar"
fi
build() {  # DSC OUT
  mkdir -p "$2" && DEB_BUILD_OPTIONS="nocheck nodoc parallel=2" sbuild --chroot-mode=unshare --chroot="$tar" -d "$rel" \
    --no-arch-all --profiles=nodoc --no-run-lintian --no-run-piuparts --no-run-autopkgtest \
    --build-dir="$2" --nolog "$1" >"$2.log" 2>&1 || die "sbuild failed: $2.log"
}
build "$work/local/mongo-c-driver_$local_v.dsc" "$work/out"
# A test build's tree is older than the archive's binaries: its ABI is
# judged against the same tree built unpatched (the archive's is reported).
old=$work && [ "$upgrade" = yes ] || { build "$dsc" "$work/stock" && old=$work/stock; }
changes=$(ls "$work"/out/*.changes)
packages=$(grep -c '\.deb$' <(sed -n '/^Files:/,/^[A-Z]/p' "$changes"))
step "sbuild $packages packages"

lint=0
lintian --fail-on error "$changes" >"$work/lintian.log" 2>&1 || lint=$?
lint_errors=$(grep -c '^E: ' "$work/lintian.log" || true)
[ "$lint" -eq 0 ] || lint_errors="$lint_errors (exit $lint)"
# The archive's shared libraries of the same names (its -dbgsym packages,
# from debian-debug, are not served on every mirror: abidiff then compares
# the exported symbols and prototypes it can read).
libs=$(cd "$work/out" && ls lib*.deb | sed -n '/-\(dev\|doc\|dbgsym\)_/!s/_.*//p')
(cd "$work" && apt-get "${apt[@]}" download $libs && for l in $libs; do apt-get "${apt[@]}" download "$l-dbgsym" || true; done) >>"$work/apt.log" 2>&1
# With debug symbols (a test build's stock build has them), the installed
# headers tell abidiff which types are public (an internal struct's layout
# is no break).
hdrs=()
if compgen -G "$old/*-dbgsym_*.deb" >/dev/null && compgen -G "$old/*-dev_*.deb" >/dev/null; then
  mkdir -p "$work/abi/old-h" "$work/abi/new-h"
  for d in "$old"/*-dev_*.deb; do dpkg-deb -x "$d" "$work/abi/old-h"; done
  for d in "$work"/out/*-dev_*.deb; do dpkg-deb -x "$d" "$work/abi/new-h"; done
  hdrs=(--hd1 "$work/abi/old-h/usr/include" --hd2 "$work/abi/new-h/usr/include" --drop-private-types)
fi
abi=0 justified=0
for lib in $libs; do
  mkdir -p "$work/abi/old-$lib" "$work/abi/new-$lib"
  for d in "$old"/${lib}_*.deb "$old"/${lib}-dbgsym_*.deb; do [ -f "$d" ] && dpkg-deb -x "$d" "$work/abi/old-$lib"; done
  for d in "$work"/out/${lib}_*.deb "$work"/out/${lib}-dbgsym_*.deb; do dpkg-deb -x "$d" "$work/abi/new-$lib"; done
  so=$(cd "$work/abi/new-$lib" && find usr/lib -name 'lib*.so.*' -type l | sort | head -n 1)
  rc=0
  dbg=() && [ -d "$work/abi/old-$lib/usr/lib/debug" ] && dbg=(--d1 "$work/abi/old-$lib/usr/lib/debug" --d2 "$work/abi/new-$lib/usr/lib/debug" "${hdrs[@]}")
  abidiff "${dbg[@]}" "$work/abi/old-$lib/$so" "$work/abi/new-$lib/$so" >"$work/abi/$lib.txt" 2>&1 || rc=$?
  # A break: abidiff failing (1, 2), or each [D]eleted or [C]hanged function
  # or symbol (4 alone with [A]dded ones is compatible), or an incompatible
  # change (8) without one; but a function the track's abi-justified file
  # names ("NAME<TAB>why"; the features tracks) is counted as justified.
  [ $((rc & 3)) -eq 0 ] || abi=$((abi + 1))
  broken=$(sed -n "s/^  \[[DC]\] //p" "$work/abi/$lib.txt" | sed -E "s/^'[^(]* \**([A-Za-z_0-9]+)\(.*/\1/; s/^'?([A-Za-z_0-9]+).*/\1/")
  [ $((rc & 8)) -eq 0 ] || [ -n "$broken" ] || abi=$((abi + 1))
  for f in $broken; do
    if grep -q "^$f	" "$fork/abi-justified" 2>/dev/null; then justified=$((justified + 1)); else abi=$((abi + 1)); fi
  done
  [ "$old" = "$work" ] || { mkdir -p "$work/abi/archive-$lib" && dpkg-deb -x "$work"/${lib}_*.deb "$work/abi/archive-$lib" &&
    abidiff "$work/abi/archive-$lib/$so" "$work/abi/new-$lib/$so" >"$work/abi/$lib-archive.txt" 2>&1 || true; }
  # The binary package against the archive's (or the stock build's): a file it loses (but the
  # documentation the nodoc profile leaves out) is a break too.
  debdiff "$old"/${lib}_*.deb "$work"/out/${lib}_*.deb >"$work/abi/$lib.debdiff" 2>&1 || true
  awk '/^Files in first .deb but not in second/ { f = 1; next } f && /^$/ { f = 0 } f && / \/usr\/(lib|include)\// { bad = 1 } END { exit bad }' \
    "$work/abi/$lib.debdiff" || abi=$((abi + 1))
done
step "lintian, abidiff"

# The signed repository.
mkdir -p "$state/conf" "$state/gnupg" "$repo" && chmod 700 "$state/gnupg"
export GNUPGHOME=$state/gnupg
gpg -q --list-secret-keys opmsg-apt@example.invalid >/dev/null 2>&1 ||
  gpg -q --batch --passphrase '' --quick-gen-key "opmsg apt repository <opmsg-apt@example.invalid>" ed25519 sign never 2>"$work/gpg.log"
key=$(gpg --with-colons --list-secret-keys opmsg-apt@example.invalid | awk -F: '/^fpr/ { print $10; exit }')
# One suite per release and track; test builds (not upgrades of the
# archive's packages) only in the -test ones.
for r in bookworm trixie sid; do for t in fixes features fixes-test features-test; do
  printf 'Codename: %s-%s\nLabel: opmsg\nOrigin: opmsg\nDescription: mongo-c-driver, the opmsg fork'"'"'s %s (%s)\nArchitectures: amd64 source\nComponents: main\nAlsoAcceptFor: %s\nSignWith: %s\n\n' \
    "$r" "$t" "$t" "$r" "$r" "$key"
done; done >"$state/conf/distributions"
gpg -q --armor --export "$key" >"$repo/opmsg-archive-keyring.asc"
rr() { reprepro -b "$state" --outdir "$repo" "$@" >>"$work/reprepro.log" 2>&1; }
rr removesrc "$suite" mongo-c-driver && rr deleteunreferenced
rr include "$suite" "$changes" && rr includedsc "$suite" "$work/local/mongo-c-driver_$local_v.dsc" || die "reprepro failed: $work/reprepro.log"
# opmsg's own packages (make package's dist/) in the host release's suites,
# replacing those published (a rebuild of the same version included).
ours=none
if [ "$rel" = "$hostrel" ]; then
  compgen -G 'dist/*.deb' >/dev/null || scripts/package.sh >"$work/package.log" 2>&1 || die "make package failed: $work/package.log"
  ours=$(cd dist && ls *.deb | sed 's/_.*//' | xargs)
  suites=$(printf '%s\n' "$rel-fixes" "$rel-features" "$suite" | sort -u)
  for s in $suites; do rr remove "$s" $ours; done && rr deleteunreferenced && for s in $suites; do rr includedeb "$s" dist/*.deb; done ||
    die "reprepro failed: $work/reprepro.log"
fi
aptsig() {  # KEYRING: apt-get update of the suite alone, Signed-By KEYRING
  local d=$work/aptsig/${1##*/} && mkdir -p "$d/lists/partial"
  printf 'Types: deb deb-src\nURIs: file:%s\nSuites: %s\nComponents: main\nSigned-By: %s\n' "$repo" "$suite" "$1" >"$d/o.sources"
  local o=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$top/$d" -o "Dir::State::Lists=$top/$d/lists" -o APT::Sandbox::User=root)
  apt-get "${o[@]}" -o APT::Update::Error-Mode=any update >"$d.log" 2>&1 && { [ "$ours" = none ] || apt-cache "${o[@]}" show $ours >>"$d.log" 2>&1; }
}
# Signed: apt accepts the suite with the published key and refuses it with
# another; Sources, the -dbgsym packages (and opmsg's own) are in it.
aptsig "$repo/opmsg-archive-keyring.asc" && ! aptsig /usr/share/keyrings/debian-archive-keyring.gpg &&
  [ -s "$repo/dists/$suite/main/source/Sources.gz" ] &&
  compgen -G "$repo/pool/main/m/mongo-c-driver/*-dbgsym_${local_v#*:}_*.deb" >/dev/null && signed=yes || signed=no
step "published in $repo, suite $suite (opmsg's packages: $ours)"

# Installed from the repository over Debian's packages in a clean testbed.
# (A test build is below the archive's revision: installed by version.)
install=$(cd "$work/out" && ls lib*.deb | sed -n '/-\(doc\|dbgsym\)_/!s/_\([^_]*\)_.*/=\1/p' | tr '\n' ' ')
sed "s/@SUITE@/$suite/; s/@INSTALL@/$install/" packaging/debian/testbed-setup >"$work/testbed-setup"
# FerretDB, where present (found as tests/peers/with-ferretdb.sh finds it),
# for debian/tests/ferretdb and encryption.
copy=(--copy=packaging/debian/tests/reply-client.c:/tmp/reply-client.c)
fdb=${OPMSG_FERRETDB:-$(command -v ferretdb || echo "$(go env GOPATH 2>/dev/null)/bin/ferretdb")}
[ ! -x "$fdb" ] || copy+=("--copy=$fdb:/usr/local/bin/ferretdb")
rc=0
autopkgtest -B "$loc" "${copy[@]}" --setup-commands="$work/testbed-setup" --summary-file="$work/autopkgtest.summary" \
  -o "$work/autopkgtest" -- unshare -r "$rel" -t "$tar" -b "$repo" /srv/opmsg-apt >"$work/autopkgtest.log" 2>&1 || rc=$?
# (autopkgtest's exit status: 2 a test skipped, 4 one failed, 6 both.) A
# skipped test (exit 77, skippable: debian/tests/ferretdb and encryption
# without FerretDB) is counted apart, not as a failure.
from_apt=no revert=no
case $rc in 0|2|4|6) from_apt=yes ;; esac
grep -q '^revert *PASS' "$work/autopkgtest.summary" && revert=yes
# P/P: the tests that passed, of debian/tests/control's (skipped ones left out).
skipped=$(grep -c ' SKIP' "$work/autopkgtest.summary" || true) && skips=""
total=$(sed -n 's/^Tests: *//p' "$loc/debian/tests/control" | tr ', ' '\n\n' | grep -c .)
tests="$(grep -c ' PASS' "$work/autopkgtest.summary" || true)/$((total - skipped))"
[ "$skipped" -eq 0 ] || skips=" ($skipped skipped)"
step "autopkgtest $tests$skips (exit $rc)"

dpkg-query -W -f '${Package}:${Architecture} ${Version} ${db:Status-Abbrev}\n' >"$work/host-after"
cmp -s "$work/host-before" "$work/host-after" && host=yes || host=no
# The committed submission (FORK_DEBS_UPDATE=1 rewrites it): current unless
# only dates differ.
sub_diff=$fork/mongo-c-driver_$next.debdiff
# (Its lines before the first "diff", a note on what it was made against, stay.)
[ "${FORK_DEBS_UPDATE:-0}" != 1 ] || [ "$track" != fixes ] ||
  { { sed '/^diff /,$d' "$sub_diff" 2>/dev/null || true; cat "$work/submission.debdiff"; } >"$work/sub.new" && mv "$work/sub.new" "$sub_diff"; }
undate() { sed -E '0,/^diff /{/^diff /!d}; s/^(---|\+\+\+) ([^\t]*)\t.*/\1 \2/; s/^(\+ -- .*>  ).*/\1DATE/' "$1"; }
[ "$track" != fixes ] || cmp -s <(undate "$work/submission.debdiff") <(undate "$sub_diff" 2>/dev/null) && current=yes ||
  { current=no; echo "fork-debs: $sub_diff is not current (FORK_DEBS_UPDATE=1 rewrites it)" >&2; }
line="fork-deb $rel $track $local_v: packages $packages, signed $signed, from apt $from_apt, upgrade $upgrade, host untouched $host, lintian errors $lint_errors, abi breaks $abi$([ "$justified" -eq 0 ] || echo " ($justified justified)"), autopkgtest $tests$skips, revert $revert"
echo "$line" | tee "$work/result"
echo "fork-debs: $(($(date +%s) - start)) s in all; the submission: $work/submission.debdiff ($changed changed lines in the patches)"
[ "$signed $from_apt $host $lint_errors $abi $revert $current" = "yes yes yes 0 0 yes yes" ] && [ "${tests%/*}" = "${tests#*/}" ]
