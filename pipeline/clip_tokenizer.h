// CLIP's byte-level BPE tokenizer (Stable Diffusion 1.x's tokenizer/ folder:
// vocab.json + merges.txt), giving the ids transformers 5.x CLIPTokenizer gives
// (tests/data/clip-tokenizer/README.md states the rules):
//  1. exact, case-sensitive "<|startoftext|>" / "<|endoftext|>" in the raw text are
//     special tokens; the text between them goes through 2-5;
//  2. NFC, every run of Unicode White_Space -> one space, full Unicode lower-casing (ICU);
//  3. CLIP's pattern 's|'t|'re|'ve|'m|'ll|'d|\p{L}+|\p{N}|[^\s\p{L}\p{N}]+ (spaces
//     dropped), each piece split again by GPT-2's pattern (ByteLevel pre-tokenizer);
//  4. each piece's UTF-8 bytes -> byte-to-unicode symbols, "</w>" on the last;
//  5. BPE: merge the lowest-ranked adjacent pair everywhere, until none is in merges.txt;
//  6. [BOS] + ids[:max-2] + [EOS], padded with EOS (= pad) to max (77).
// Invalid UTF-8 in the input becomes U+FFFD (ICU's conversion) before step 2.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sdspeed {

struct ClipTokens {
  std::vector<int64_t> ids;  // exactly maxLength ids
  int tokensBeforePadding = 0;  // BOS and EOS included, after truncation (= attention-mask sum)
  int tokensUntruncated = 0;    // BOS and EOS included, without truncation
  bool truncated() const { return tokensUntruncated > tokensBeforePadding; }
};

class ClipTokenizer {
 public:
  // Throws Error naming the file for a missing or malformed vocabulary or merges file,
  // a merge whose parts or result are not in the vocabulary, or missing special tokens.
  ClipTokenizer(const std::string& vocabJsonPath, const std::string& mergesTxtPath);
  // A tokenizer/ folder (vocab.json + merges.txt).
  static ClipTokenizer fromFolder(const std::string& dir);

  // The ids of the text, special tokens included where written, no BOS/EOS, no truncation.
  std::vector<int64_t> encode(std::string_view text) const;
  // What the SD pipeline feeds the text encoder: framed, truncated, padded.
  ClipTokens tokenize(std::string_view text, int maxLength = 77) const;

  int64_t bos() const { return bos_; }
  int64_t eos() const { return eos_; }
  int64_t pad() const { return eos_; }  // SD 1.x pads with <|endoftext|>
  size_t vocabSize() const { return vocab_.size(); }
  // The token string of an id (vocab.json's key), "" when unknown.
  std::string token(int64_t id) const;

 private:
  void bpe(const std::string& piece, std::vector<int64_t>& out) const;
  std::unordered_map<std::string, int64_t> vocab_;
  std::vector<std::string> byId_;
  std::map<std::pair<std::string, std::string>, int> ranks_;
  int64_t bos_ = -1, eos_ = -1;
};

// The pieces of steps 2-3 for a text without special tokens (exposed for tests and
// the fuzz target): normalized, split, in UTF-8.
std::vector<std::string> clipPreTokenize(std::string_view text);

}  // namespace sdspeed
