#!/bin/bash
# Debian's mongo-c-driver with the fork's patches, one release and track
# (make fork-debs; docs/debian.md says each step and variable). Runs as root.
#
# Usage: scripts/fork-debs.sh [RELEASE [TRACK]]   default: bookworm fixes
#
# Debian's newest served source (or, where none is served, Debian's packaging
# tree FORK_DEBS_TREE: a test build) with fork/debian/RELEASE/TRACK/'s patches
# and changelog entry: the submission (its debdiff) and the local packages
# (~opmsgN, debian/tests), built with sbuild, checked (lintian, abidiff,
# debdiff), published with reprepro in the signed repository, tested installed
# (autopkgtest). Ends with the fork-deb line; exit 1 when a check failed.
set -euo pipefail
export LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive
cd "$(dirname "$0")/.."
top=$PWD rel=${1:-bookworm} track=${2:-fixes} n=${FORK_DEBS_REVISION:-1}
repo=${OPMSG_APT:-/srv/opmsg-apt} state=${OPMSG_APT_STATE:-/var/lib/opmsg/apt}
fork=fork/debian/$rel/$track work=build/fork-debs/$rel-$track tar=build/sbuild/$rel-amd64.tar.zst
die() { echo "fork-debs: $*" >&2; exit 1; }
step() { echo "fork-debs: $1 $(($(date +%s) - t0)) s"; t0=$(date +%s); }
hoststate() { dpkg-query -W -f '${Package}:${Architecture} ${Version} ${db:Status-Abbrev}\n' >"$work/host-$1"; }
sources() { printf 'Types: deb deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n\n' "$@"; }  # URI SUITES KEYRING
[ "$(id -u)" -eq 0 ] || die "needs root (sbuild's unshare mode, reprepro under $state)"
[ -d "$fork" ] || die "no $fork"
rm -rf "$work" && mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial" "$work/apt/parts" "$work/abi" build/sbuild
t0=$(date +%s) start=$t0 && hoststate before

# Debian's newest served revision: a private apt configuration on the mirror
# this machine's apt uses (nothing under /etc/apt changes).
. scripts/lib/host-uri.sh
hostrel=$(. /etc/os-release && echo "${VERSION_CODENAME:-}") dkey=/usr/share/keyrings/debian-archive-keyring.gpg
mirror=${OPMSG_DEBIAN_MIRROR:-$(host_uri "$hostrel")} security=$(host_uri "$hostrel-security")
[ -n "$mirror" ] || die "no Debian mirror in this machine's apt sources; set OPMSG_DEBIAN_MIRROR"
[ "$rel" != sid ] || security=""
{ sources "$mirror" "$rel$([ "$rel" = sid ] || echo " $rel-updates $rel-proposed-updates")" "$dkey"
  [ -z "$security" ] || sources "$security" "$rel-security" "$dkey"; } >"$work/apt/parts/debian.sources"
apt=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$top/$work/apt/parts" -o Acquire::Check-Valid-Until=false
  -o "Dir::State::Lists=$top/$work/apt/lists" -o "Dir::Cache=$top/$work/apt/cache"
  -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null -o APT::Sandbox::User=root)
# (A suite the mirror lacks, e.g. an empty proposed-updates, is not an error.)
apt-get "${apt[@]}" -q update >"$work/apt.log" 2>&1 || true
if ! (cd "$work" && apt-get "${apt[@]}" source mongo-c-driver) >>"$work/apt.log" 2>&1; then
  # Indexed but not served: Debian's packaging tree, a test build, with an
  # orig tarball made here (the tree without debian/).
  tree=${FORK_DEBS_TREE:-$(ls ../shared/upstream/mongo-c-driver-debian-"${rel/#sid/unstable}"-*.tar.xz 2>/dev/null | head -n 1)}
  [ -n "$tree" ] || die "the archive serves no mongo-c-driver source for $rel (apt.log) and no tree is given (FORK_DEBS_TREE)"
  mkdir "$work/tree"
  if [ -d "$tree" ]; then cp -a "$tree" "$work/tree/src"; else tar -xJf "$tree" -C "$work/tree" && mv "$work"/tree/* "$work/tree/src"; fi
  v=$(cd "$work/tree/src" && dpkg-parsechangelog -S Version) && u=${v%-*}
  tar --sort=name --mtime=@"$(cd "$work/tree/src" && dpkg-parsechangelog -S Timestamp)" --owner=0 --group=0 --numeric-owner \
    --exclude=./debian --exclude=./.git -C "$work/tree/src" --transform "s,^\.,mongo-c-driver-$u," -cf - . | gzip -n >"$work/mongo-c-driver_$u.orig.tar.gz"
  ln -s "../mongo-c-driver_$u.orig.tar.gz" "$work/tree/" && (cd "$work/tree" && dpkg-source -b src >/dev/null) && mv "$work"/tree/*.d* "$work/"
  echo "fork-debs: the archive serves no source for $rel: Debian's packaging tree ${tree##*/} ($v), a test build" | tee -a "$work/apt.log"
fi
dsc=$(ls "$work"/mongo-c-driver_*.dsc) && served=${dsc##*_} && served=${served%.dsc}
# Debian's next revision: the next stable update, or (sid) the next upload.
case $rel in bookworm) u=12 ;; trixie) u=13 ;; *) u="" ;; esac
next=$(U=$u perl -lpe '$ENV{U} ? (s/(\+deb\d+u)(\d+)$/$1.($2+1)/e || s/^([^+]*)$/$1+deb$ENV{U}u1/) : s/-(\d+)$/"-".($1+1)/e' <<<"$served")
local_v=$next~opmsg$n && [ "$track" = fixes ] || local_v=$local_v+$track
# The archive's binaries (the installed ones on the host's release): the
# local build upgrades them, or is a test build.
archive=$(apt-cache "${apt[@]}" policy libmongoc-dev | sed -n 's/^  Candidate: //p')
installed=$archive && [ "$rel" != "$hostrel" ] || installed=$(dpkg-query -W -f '${Version}' libmongoc-dev 2>/dev/null || echo "$archive")
dpkg --compare-versions "$local_v" gt "$served" && dpkg --compare-versions "$local_v" lt "$next" ||
  die "$local_v does not sort between $served and $next"
upgrade=yes suite=$rel-$track
dpkg --compare-versions "$local_v" gt "$archive" && dpkg --compare-versions "$local_v" gt "$installed" || upgrade=test-build suite=$rel-$track-test
step "source $served (archive $archive, installed $installed), submission $next, local $local_v in $suite:"

# The submission: Debian's tree, the patches (the track's own 000N_ files, or
# those its "patches" file lists, numbered after Debian's last), dch.
sub=$work/submission/mongo-c-driver-${served%%-*} loc=$work/local/mongo-c-driver-${served%%-*}
for d in submission local; do mkdir "$work/$d" && ln -s "../mongo-c-driver_${served%%-*}.orig.tar.gz" "$work/$d/"; done
dpkg-source --no-check -x "$dsc" "$sub" >/dev/null 2>&1
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
entry() {  # TREE VERSION [ITEM]: dch, the fork's items then ITEM, distribution the release's (sid's: unstable)
  local first=-v$2
  { grep -v '^#' "$fork/changelog"; [ -z "${3:-}" ] || echo "$3"; } | while read -r item; do
    (cd "$1" && dch "$first" -D "${rel/#sid/unstable}" --force-distribution -u medium "$item") 2>>"$work/dch.log"; first=-a
  done
  (cd "${1%/*}" && dpkg-source -b "${1##*/}" >/dev/null)
}
entry "$sub" "$next"
debdiff "$dsc" "$work/submission/mongo-c-driver_$next.dsc" >"$work/submission.debdiff" 2>/dev/null || true
changed=$(filterdiff -i '*/debian/patches/0*' "$work/submission.debdiff" | grep -c '^+[-+][^-+]' || true)
# The local packages: the local suffix, debian/tests, our Maintainer.
mkdir -p "$loc/debian/tests" && cp packaging/debian/tests/* "$fork/reply-cases" tests/dropin/hostile_server.py tests/encryption/enc-client.c "$loc/debian/tests/"
sed -i 's/^Maintainer: .*/Maintainer: opmsg project <opmsg@example.invalid>/' "$loc/debian/control"
entry "$loc" "$local_v" "Local build (opmsg project, not Debian's): $next's patches, with debian/tests and the project as Maintainer"
step "sources"

# The clean build (mmdebstrap picks the format from the name: .tar.zst last).
if [ ! -f "$tar" ] || [ -n "$(find "$tar" -mtime +7)" ]; then
  mirrors=("deb $mirror $rel main") && [ "$rel" = sid ] || mirrors+=("deb $mirror $rel-updates main" ${security:+"deb $security $rel-security main"})
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
packages=$(sed -n '/^Files:/,/^[A-Z]/p' "$changes" | grep -c '\.deb$')
# The packages to install (PACKAGE=VERSION, the -dev ones too) and the libraries.
install=$(cd "$work/out" && ls lib*.deb | sed -n '/-\(doc\|dbgsym\)_/!s/_\([^_]*\)_.*/=\1/p' | xargs)
libs=$(printf '%s\n' $install | sed -n '/-dev=/!s/=.*//p')
step "sbuild $packages packages"

lint=0 && lintian --fail-on error "$changes" >"$work/lintian.log" 2>&1 || lint=$?
lint_errors=$(grep -c '^E: ' "$work/lintian.log" || true) && [ "$lint" -eq 0 ] || lint_errors="$lint_errors (exit $lint)"
# The archive's libraries and, where served, their -dbgsym packages; with
# debug symbols the -dev packages' headers tell abidiff which types are public.
(cd "$work" && apt-get "${apt[@]}" download $libs && for l in $libs; do apt-get "${apt[@]}" download "$l-dbgsym" || true; done) >>"$work/apt.log" 2>&1
unpack() { local d=$1 f && shift && for f; do [ ! -f "$f" ] || dpkg-deb -x "$f" "$d"; done; }  # DIR DEB...
hdrs=() abi=0 justified=0
if compgen -G "$old/*-dbgsym_*.deb" >/dev/null && compgen -G "$old/*-dev_*.deb" >/dev/null; then
  unpack "$work/abi/old-h" "$old"/*-dev_*.deb && unpack "$work/abi/new-h" "$work"/out/*-dev_*.deb
  hdrs=(--hd1 "$work/abi/old-h/usr/include" --hd2 "$work/abi/new-h/usr/include" --drop-private-types)
fi
for lib in $libs; do
  o=$work/abi/old-$lib w=$work/abi/new-$lib
  unpack "$o" "$old/${lib}"_*.deb "$old/$lib"-dbgsym_*.deb && unpack "$w" "$work/out/${lib}"_*.deb "$work/out/$lib"-dbgsym_*.deb
  so=$(cd "$w" && find usr/lib -name 'lib*.so.*' -type l | sort | head -n 1)
  dbg=() && [ ! -d "$o/usr/lib/debug" ] || dbg=(--d1 "$o/usr/lib/debug" --d2 "$w/usr/lib/debug" "${hdrs[@]}")
  rc=0 && abidiff "${dbg[@]}" "$o/$so" "$w/$so" >"$work/abi/$lib.txt" 2>&1 || rc=$?
  # A break: abidiff failing (1, 2), each [D]eleted or [C]hanged function or
  # symbol not named in the track's abi-justified ("NAME<TAB>why"), or an
  # incompatible change (8) without one (4 alone, [A]dded ones, is no break).
  broken=$(sed -n "s/^  \[[DC]\] //p" "$work/abi/$lib.txt" | sed -E "s/^'[^(]* \**([A-Za-z_0-9]+)\(.*/\1/; s/^'?([A-Za-z_0-9]+).*/\1/")
  j=$(printf '%s\n' $broken | grep -cxF -f <(cut -f1 "$fork/abi-justified" 2>/dev/null) || true)
  abi=$((abi + $(wc -w <<<"$broken") - j + (rc & 3 ? 1 : 0) + (rc & 8 && ${#broken} == 0 ? 1 : 0))) justified=$((justified + j))
  [ "$old" = "$work" ] || { unpack "$work/abi/archive-$lib" "$work"/${lib}_*.deb &&
    abidiff "$work/abi/archive-$lib/$so" "$w/$so" >"$work/abi/$lib-archive.txt" 2>&1 || true; }
  # The package against the archive's (or the stock build's): a file it loses
  # under /usr/lib or /usr/include (not the docs nodoc leaves out) is a break.
  debdiff "$old"/${lib}_*.deb "$work"/out/${lib}_*.deb >"$work/abi/$lib.debdiff" 2>&1 || true
  sed -n '/^Files in first .deb but not in second/,/^$/p' "$work/abi/$lib.debdiff" | grep ' /usr/\(lib\|include\)/' >/dev/null && abi=$((abi + 1))
done
step "lintian, abidiff"

# The signed repository: one suite per release and track, test builds only in
# the -test ones; the key made at first use.
mkdir -p "$state/conf" "$state/gnupg" "$repo" && chmod 700 "$state/gnupg"
export GNUPGHOME=$state/gnupg
gpg -q --list-secret-keys opmsg-apt@example.invalid >/dev/null 2>&1 ||
  gpg -q --batch --passphrase '' --quick-gen-key "opmsg apt repository <opmsg-apt@example.invalid>" ed25519 sign never 2>"$work/gpg.log"
key=$(gpg --with-colons --list-secret-keys opmsg-apt@example.invalid | awk -F: '/^fpr/ { print $10; exit }')
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
  local d=$work/aptsig/${1##*/} && mkdir -p "$d/lists/partial" && sources "file:$repo" "$suite" "$1" >"$d/o.sources"
  local o=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$top/$d" -o "Dir::State::Lists=$top/$d/lists" -o APT::Sandbox::User=root)
  apt-get "${o[@]}" -o APT::Update::Error-Mode=any update >"$d.log" 2>&1 && { [ "$ours" = none ] || apt-cache "${o[@]}" show $ours >>"$d.log" 2>&1; }
}
# Signed: apt accepts the suite with the published key and refuses it with
# another; Sources, the -dbgsym packages (and opmsg's own) are in it.
aptsig "$repo/opmsg-archive-keyring.asc" && ! aptsig "$dkey" && [ -s "$repo/dists/$suite/main/source/Sources.gz" ] &&
  compgen -G "$repo/pool/main/m/mongo-c-driver/*-dbgsym_${local_v#*:}_*.deb" >/dev/null && signed=yes || signed=no
step "published in $repo, suite $suite (opmsg's packages: $ours)"

# Installed from the repository over Debian's packages in a clean testbed,
# with FerretDB where present (as tests/peers/with-ferretdb.sh finds it).
sed "s/@SUITE@/$suite/; s/@INSTALL@/$install/" packaging/debian/testbed-setup >"$work/testbed-setup"
copy=(--copy=packaging/debian/tests/reply-client.c:/tmp/reply-client.c) sum=$work/autopkgtest.summary
fdb=${OPMSG_FERRETDB:-$(command -v ferretdb || echo "$(go env GOPATH 2>/dev/null)/bin/ferretdb")}
[ ! -x "$fdb" ] || copy+=("--copy=$fdb:/usr/local/bin/ferretdb")
rc=0 && autopkgtest -B "$loc" "${copy[@]}" --setup-commands="$work/testbed-setup" --summary-file="$sum" \
  -o "$work/autopkgtest" -- unshare -r "$rel" -t "$tar" -b "$repo" /srv/opmsg-apt >"$work/autopkgtest.log" 2>&1 || rc=$?
# autopkgtest's exit status: 2 a test skipped (exit 77, skippable: counted
# apart), 4 one failed, 6 both; P/P: the tests of debian/tests/control that
# passed, of those not skipped.
case $rc in 0|2|4|6) from_apt=yes ;; *) from_apt=no ;; esac
grep -q '^revert *PASS' "$sum" && revert=yes || revert=no
skipped=$(grep -c ' SKIP' "$sum" || true) total=$(sed -n 's/^Tests: *//p' "$loc/debian/tests/control" | tr ', ' '\n\n' | grep -c .)
tests="$(grep -c ' PASS' "$sum" || true)/$((total - skipped))" skips="" && [ "$skipped" -eq 0 ] || skips=" ($skipped skipped)"
step "autopkgtest $tests$skips (exit $rc)"

hoststate after && cmp -s "$work/host-before" "$work/host-after" && host=yes || host=no
# The committed submission (FORK_DEBS_UPDATE=1 rewrites it, keeping its lines
# before the first "diff"): current unless only dates differ.
sub_diff=$fork/mongo-c-driver_$next.debdiff current=yes
[ "${FORK_DEBS_UPDATE:-0}" != 1 ] || [ "$track" != fixes ] ||
  { { sed '/^diff /,$d' "$sub_diff" 2>/dev/null || true; cat "$work/submission.debdiff"; } >"$work/sub.new" && mv "$work/sub.new" "$sub_diff"; }
undate() { sed -E '0,/^diff /{/^diff /!d}; s/^(---|\+\+\+) ([^\t]*)\t.*/\1 \2/; s/^(\+ -- .*>  ).*/\1DATE/' "$1"; }
[ "$track" != fixes ] || cmp -s <(undate "$work/submission.debdiff") <(undate "$sub_diff" 2>/dev/null) ||
  { current=no; echo "fork-debs: $sub_diff is not current (FORK_DEBS_UPDATE=1 rewrites it)" >&2; }
echo "fork-deb $rel $track $local_v: packages $packages, signed $signed, from apt $from_apt, upgrade $upgrade, host untouched $host, lintian errors $lint_errors, abi breaks $abi$([ "$justified" -eq 0 ] || echo " ($justified justified)"), autopkgtest $tests$skips, revert $revert" | tee "$work/result"
echo "fork-debs: $(($(date +%s) - start)) s in all; the submission: $work/submission.debdiff ($changed changed lines in the patches)"
[ "$signed $from_apt $host $lint_errors $abi $revert $current" = "yes yes yes 0 0 yes yes" ] && [ "${tests%/*}" = "${tests#*/}" ]
