#!/usr/bin/env bash
# An installed copy of vt used as a stranger would (ctest "install"):
#   1. cmake --install BUILD --prefix P (a temporary P) puts bin/vt and its
#      three links, libvt.a, libvt.so, the public headers (include/vt/...)
#      and vt.pc there;
#   2. bin/vt --version names the version and the git revision; the links
#      dispatch to their subcommands;
#   3. every installed header compiles on its own with pkg-config's flags;
#   4. tests/support/install_client.c, built through pkg-config against
#      libvt.so and (--static) against libvt.a, generates on a tiny fixture
#      the same greedy tokens as the installed `vt run`; the shared build
#      loads the installed libvt.so, the static one none.
# usage: tests/install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
    echo "install: FAIL: $*" >&2
    exit 1
}
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > "$work/install.log" 2>&1 || {
    cat "$work/install.log" >&2
    fail "cmake --install $build --prefix $prefix"
}
for b in vt vt-capture vt-neartie vt-seal; do
    [ -x "$prefix/bin/$b" ] || fail "bin/$b: missing"
done
version=$("$prefix/bin/vt" --version)
echo "$version" | grep -Eq '^vt [0-9]+\.[0-9]+\.[0-9]+ \(git ([0-9a-f]{40}|unknown)\)$' ||
    fail "vt --version: '$version': expected 'vt X.Y.Z (git REVISION)'"
# The help read whole first: grep -q stops at its match, and under pipefail
# a longer help then dies of SIGPIPE and reads as a failure (it did, at random).
help=$("$prefix/bin/vt-seal" --help 2>&1)
grep -q "vt-seal\|vt seal" <<< "$help" || fail "bin/vt-seal: does not run vt seal"
help=$("$prefix/bin/vt-capture" --help 2>&1)
grep -q "capture" <<< "$help" || fail "bin/vt-capture: does not run vt capture"
"$prefix/bin/vt" --version extra > /dev/null 2>&1 && fail "vt --version extra: accepted"

pc=$(find "$prefix" -name vt.pc)
[ -n "$pc" ] || fail "no vt.pc under $prefix"
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")
pkg-config --exists vt || fail "pkg-config: vt.pc does not load"
[ "vt $(pkg-config --modversion vt)" = "${version% (*}" ] || fail "vt.pc version $(pkg-config --modversion vt): expected ${version% (*}"
libdir=$(pkg-config --variable=libdir vt)
[ -f "$libdir/libvt.a" ] && [ -e "$libdir/libvt.so" ] || fail "$libdir: expected libvt.a and libvt.so"
case $(cd "$libdir" && pwd -P) in "$(cd "$prefix" && pwd -P)"/*) ;; *) fail "vt.pc libdir $libdir: not under $prefix" ;; esac

headers=$(cd "$prefix/include" && find vt -name '*.h' | sort)
[ "$(echo "$headers" | grep -c .)" -ge 10 ] || fail "include/vt: $(echo "$headers" | grep -c .) headers: expected the public ones"
grep -qx "vt/engine/vt_plugin.h" <<< "$headers" || fail "include/vt/engine/vt_plugin.h (the plugin contract): missing"
for h in $headers; do
    echo "#include <$h>" | cc -std=c11 -fsyntax-only -Wall -Werror -x c - $(pkg-config --cflags vt) ||
        fail "$h: does not compile on its own"
done

cc -std=gnu11 -O1 -o "$work/client_shared" "$src/tests/support/install_client.c" $(pkg-config --cflags --libs vt) ||
    fail "install_client: link against libvt.so through pkg-config"
# libvt.a, with the libraries vt.pc names as private (theirs shared).
cc -std=gnu11 -O1 -o "$work/client_static" "$src/tests/support/install_client.c" $(pkg-config --cflags vt) \
    "$libdir/libvt.a" $(pkg-config --libs $(pkg-config --print-requires-private vt | awk '{ print $1 }')) \
    $(sed -n 's/^Libs.private: //p' "$pc") || fail "install_client: link against libvt.a"
# (ldd's output read whole before grep -q, as the help above.)
deps=$(LD_LIBRARY_PATH=$libdir ldd "$work/client_shared")
grep -q "$libdir/libvt.so" <<< "$deps" || fail "client_shared: does not load $libdir/libvt.so"
deps=$(ldd "$work/client_static")
grep -q "libvt.so" <<< "$deps" && fail "client_static: loads a libvt.so"

"$prefix/bin/vt" fixture make --preset tiny --weights Q8_0 -o "$work/tiny.gguf" > /dev/null
want=$("$prefix/bin/vt" run --runner engine --model "$work/tiny.gguf" --prompt-tokens 1,2,3 --max-tokens 6 |
    awk '/^ *[0-9]+ +[0-9]+ / { printf " %s", $2 }')
[ -n "$want" ] || fail "vt run printed no tokens"
for c in shared static; do
    got=$(LD_LIBRARY_PATH=$libdir "$work/client_$c" "$work/tiny.gguf" 1,2,3 6)
    [ "$got" = "tokens:$want" ] || fail "client_$c: '$got': expected 'tokens:$want' (vt run)"
done
echo "install: OK: $version; $(echo "$headers" | grep -c .) headers; client (shared and static) tokens:$want as vt run"
