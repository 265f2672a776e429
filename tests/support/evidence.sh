# Shared by the checks of committed evidence (tests/gpu_evidence.sh,
# tests/transformers_evidence.sh); sourced, after bin, work, say and bad
# are set.

# open_archive A DIR OUT: A verified against its seal and extracted by
# vt-seal into DIR/OUT; 1 (after bad) when either refuses.
open_archive() {
    local a=$1 d=$2 name
    name=$(basename "$a" .tar.gz)
    mkdir -p "$d"
    if ! "$bin/vt-seal" verify "$a" >"$d/verify.log" 2>&1; then
        bad "$name: vt-seal verify: $(tail -1 "$d/verify.log")"
        return 1
    fi
    if ! "$bin/vt-seal" extract "$a" -C "$d/$3" >/dev/null 2>"$d/extract.log"; then
        bad "$name: vt-seal extract: $(tail -1 "$d/extract.log")"
        return 1
    fi
}

# tampered_is_refused A: a copy of A with one byte changed (and A's seal)
# must not verify.
tampered_is_refused() {
    cp "$1" "$work/tampered.tar.gz"
    cp "$1.seal.json" "$work/tampered.tar.gz.seal.json"
    local byte
    byte=$(od -An -tu1 -j1000 -N1 "$work/tampered.tar.gz" | tr -d ' ')
    printf "\\$(printf %o $((byte ^ 0xff)))" | dd of="$work/tampered.tar.gz" bs=1 seek=1000 conv=notrunc status=none
    cmp -s "$1" "$work/tampered.tar.gz" && bad "negative: the byte was not changed"
    if "$bin/vt-seal" verify "$work/tampered.tar.gz" >/dev/null 2>&1; then
        bad "negative: an archive with a changed byte verified"
    else
        say "negative: an archive with a changed byte is refused"
    fi
}
