/* The pre-tokenizer regexes of vt's byte-level BPE (engine/tokenizer.c,
 * which compiles them with PCRE2) and of the Hugging Face tokenizer files it
 * exports (oracle/hf_tokenizer.c, for Oniguruma): one spelling, so the two
 * cannot drift apart. VT_RE_QWEN2(G) and VT_RE_QWEN35(G) take G, a class
 * intersection appended to every class that holds letters, numbers or
 * marks ("" for vt's own; hf_tokenizer.c's guard against Unicode 16).
 *
 * The patterns are llama.cpp's (its adapted forms, with the case-insensitive
 * contraction group spelled out), made to classify code points exactly as
 * llama.cpp's own tables do:
 *  - \s is spelled out as llama.cpp's whitespace set (the Unicode White_Space
 *    property); PCRE2's \s also takes U+180E.
 *  - llama.cpp's tables are Unicode 15.1; PCRE2 10.42 is Unicode 14.0. The
 *    X ranges are the code points that are L / N / M in 15.1 but unassigned
 *    in 14.0 (Kawi, Nag Mundari, Kaktovik numerals, CJK Ext. H and I, ...).
 *    Nothing changed category the other way. */
#ifndef VT_TOKENIZER_REGEX_H
#define VT_TOKENIZER_REGEX_H

#define VT_RE_WS "\\t\\n\\x0B\\f\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}" \
           "\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
#define VT_RE_LX "\\x{1123F}-\\x{11240}\\x{11F02}\\x{11F04}-\\x{11F10}\\x{11F12}-\\x{11F33}" \
           "\\x{1342F}\\x{13441}-\\x{13446}\\x{1B132}\\x{1B155}\\x{1DF25}-\\x{1DF2A}"  \
           "\\x{1E030}-\\x{1E06D}\\x{1E4D0}-\\x{1E4EB}\\x{2B739}\\x{2EBF0}-\\x{2EE5D}" \
           "\\x{31350}-\\x{323AF}"
#define VT_RE_NX "\\x{11F50}-\\x{11F59}\\x{1D2C0}-\\x{1D2D3}\\x{1E4F0}-\\x{1E4F9}"
#define VT_RE_MX "\\x{0CF3}\\x{0ECE}\\x{10EFD}-\\x{10EFF}\\x{11241}\\x{11F00}-\\x{11F01}"      \
           "\\x{11F03}\\x{11F34}-\\x{11F3A}\\x{11F3E}-\\x{11F42}\\x{13440}"             \
           "\\x{13447}-\\x{13455}\\x{1E08F}\\x{1E4EC}-\\x{1E4EF}"
#define VT_RE_CL "\\p{L}" VT_RE_LX
#define VT_RE_CN "\\p{N}" VT_RE_NX
#define VT_RE_CM "\\p{M}" VT_RE_MX
#define VT_RE_CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define VT_RE_WS_TAIL "|[" VT_RE_WS "]*[\\r\\n]+|[" VT_RE_WS "]+(?![^" VT_RE_WS "])|[" VT_RE_WS "]+"

/* (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}
 * | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
#define VT_RE_QWEN2(G)                                                                                   \
    VT_RE_CONTRACTIONS "|[^\\r\\n" VT_RE_CL VT_RE_CN G "]?[" VT_RE_CL G "]+|[" VT_RE_CN G "]| ?[^" VT_RE_WS \
        VT_RE_CL VT_RE_CN G "]+[\\r\\n]*" VT_RE_WS_TAIL
/* As qwen2, but letter runs also take combining marks: [\p{L}\p{M}]+ */
#define VT_RE_QWEN35(G)                                                                                  \
    VT_RE_CONTRACTIONS "|[^\\r\\n" VT_RE_CL VT_RE_CN G "]?[" VT_RE_CL VT_RE_CM G "]+|[" VT_RE_CN G         \
        "]| ?[^" VT_RE_WS VT_RE_CL VT_RE_CM VT_RE_CN G "]+[\\r\\n]*" VT_RE_WS_TAIL

#endif
