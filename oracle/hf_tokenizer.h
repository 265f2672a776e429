/* The Hugging Face tokenizer files of an exported model (vt export
 * --safetensors, oracle/hf_export.h): DIR/tokenizer.json, read by the
 * `tokenizers` library (Tokenizer.from_file) and, through
 * DIR/tokenizer_config.json, by transformers' AutoTokenizer, built so that
 * both give exactly vt's ids (engine/tokenizer.h) for any text:
 *
 *     tokenizer(text)["input_ids"]  ==  vt_tokenize(text, add_special = 1,
 *                                                   parse_special = 1)
 *
 * Only vocabularies engine/tokenizer.c takes are written: byte-level BPE
 * (tokenizer.ggml.model "gpt2") with pre-tokenizer "qwen2" or "qwen35".
 * Everything comes from vt's tokenizer built from the GGUF: token texts,
 * token attributes after llama.cpp's adjustments (a NORMAL "</s>" that
 * llama.cpp makes CONTROL is an added token here too), special ids.
 *
 * tokenizer.json (the `tokenizers` format, version "1.0"; fields as
 * tokenizers/src/tokenizer/serialization.rs, models/bpe/serialization.rs,
 * pre_tokenizers/split.rs, byte_level.rs, processors/template.rs and
 * tokenizer/added_vocabulary.rs read them):
 *  - added_tokens: every CONTROL, UNKNOWN and USER_DEFINED token, by id,
 *    "special" true for CONTROL and UNKNOWN (vt matches those in text only
 *    with parse_special, as tokenizers matches special tokens unless
 *    encode_special_tokens is set), false for USER_DEFINED (matched
 *    always, in both), "normalized" false, no stripping. Their texts are
 *    also in model.vocab under the same ids, so tokenizers keeps the ids.
 *    tokenizers matches added tokens leftmost-longest in one pass, vt (as
 *    llama.cpp) longest token first over the whole text: the two agree
 *    unless an added token can overlap another (a proper suffix of one is
 *    a proper prefix of the other), which is refused.
 *  - normalizer: null. vt, like llama.cpp, does not normalize; Qwen's
 *    published tokenizer applies NFC, so on text that is not in NFC these
 *    files follow vt, not Qwen's own tokenizer.
 *  - pre_tokenizer: Sequence [Split {Regex: vt's pre-tokenizer regex,
 *    behavior Isolated, invert false}, ByteLevel {add_prefix_space false,
 *    trim_offsets false, use_regex false}]. The regex is engine/tokenizer.c's
 *    for qwen2 / qwen35 (contractions spelled out case by case, llama.cpp's
 *    whitespace set, the Unicode 15.1 letters, numbers and marks that
 *    Unicode 14.0 lacks), and each class that holds \p{L}, \p{N} or \p{M}
 *    also takes "&&[^U16]": U16 the code points that are L, N or M in
 *    Unicode 16.0 but none of them in 15.1 (llama.cpp's tables). tokenizers
 *    runs the regex in Oniguruma: onig_sys 69.9 (tokenizers >= 0.22)
 *    bundles Oniguruma at Unicode 16.0, onig_sys 69.8 (0.20, 0.21) at 14.0;
 *    with both additions the classes are llama.cpp's 15.1 ones on either.
 *    PCRE2 (vt) has no "&&" before 10.45, which vt does not use; the
 *    classes mean there what they mean without it.
 *  - post_processor: null, unless the vocabulary adds BOS or EOS
 *    (tokenizer.ggml.add_bos_token / add_eos_token): then TemplateProcessing
 *    "BOS $A EOS" as vt_tokenize(add_special = 1) does (pair: the same
 *    around $B:1, as transformers builds it).
 *  - decoder: ByteLevel (decoding is not made to match vt's).
 *  - model: BPE, vocab {text: id} for every token in id order, merges as
 *    [left, right] pairs in the GGUF's order, split where vt splits them
 *    (at the first space after the first byte). The pair form is the one
 *    tokenizers >= 0.20.0 writes and reads (it also reads the older
 *    "left right" strings, which cannot hold a token with a space); older
 *    tokenizers read strings only. Merges vt ignores (no space, an empty
 *    side) and repeats of an earlier pair (vt keeps the first rank;
 *    tokenizers' map would keep the last) are left out. dropout null,
 *    unk_token null (vt drops a symbol that is no token, as tokenizers does
 *    without an unk token), continuing_subword_prefix and
 *    end_of_word_suffix null, fuse_unk, byte_fallback, ignore_merges false.
 *
 * tokenizer_config.json: tokenizer_class "PreTrainedTokenizerFast". In
 * transformers 5.x AutoTokenizer then loads tokenizer.json as it is
 * (TokenizersBackend: the class in tokenizer_config differs from the model
 * type's own, Qwen2Tokenizer, so tokenization_auto takes the generic
 * backend, which reads the file whole); "Qwen2TokenizerFast" would select
 * Qwen2Tokenizer, whose __init__ rebuilds the pre-tokenizer and an NFC
 * normalizer from vocab and merges alone. 4.x's PreTrainedTokenizerFast
 * also reads the file as it is. Nothing is downloaded. bos_token,
 * eos_token, pad_token: vt's ids' texts where those tokens are added tokens
 * (null otherwise: transformers would add a named token as a special one
 * and split it out of text, which vt does not); unk_token null;
 * add_bos_token / add_eos_token as the GGUF says (transformers 5 rebuilds
 * the post-processor from them); clean_up_tokenization_spaces false;
 * split_special_tokens false; model_max_length from
 * <arch>.context_length when present; chat_template from
 * tokenizer.chat_template when present.
 *
 * Refused (VT_EINPUT, one line naming the file, the key and what was
 * expected): a vocabulary vt's tokenizer refuses; a token text or chat
 * template that is not well-formed UTF-8 or holds a NUL byte (JSON strings
 * carry text; vt's own JSON reader refuses \u0000); a merge whose sides or
 * result are not tokens (tokenizers refuses the file); added tokens that
 * overlap; BOS or EOS added but not an added token (transformers could not
 * name it). Output is deterministic: the same GGUF gives the same bytes. */
#ifndef VT_HF_TOKENIZER_H
#define VT_HF_TOKENIZER_H

#include "../common/vt_error.h"
#include "../engine/gguf_file.h"

/* tokenizer.json and tokenizer_config.json texts (NUL-terminated, malloc'd,
 * caller frees) for g's vocabulary. VT_EINPUT with one line (file, key,
 * expected) for a vocabulary this cannot express; both outputs are NULL
 * then. */
int vt_hf_tokenizer_files(const vt_gguf *g, char **tokenizer_json, char **tokenizer_config_json,
                          vt_error *err);

/* The Split regex written for pre-tokenizer pre ("qwen2", "qwen35"), or
 * NULL for any other. */
const char *vt_hf_tokenizer_regex(const char *pre);

#endif
