// libFuzzer target: the CLIP tokenizer on arbitrary bytes (invalid UTF-8 included).
// Every input gives 77 ids from the vocabulary, framed by BOS ... EOS.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "pipeline/clip_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const sdspeed::ClipTokenizer tok = sdspeed::ClipTokenizer::fromFolder(SDSPEED_FUZZ_TOKENIZER_DIR);
  sdspeed::ClipTokens t = tok.tokenize(std::string_view(reinterpret_cast<const char*>(data), size));
  if (t.ids.size() != 77 || t.ids[0] != tok.bos() || t.tokensBeforePadding < 2 || t.tokensBeforePadding > 77)
    std::abort();
  if (t.ids[static_cast<size_t>(t.tokensBeforePadding) - 1] != tok.eos()) std::abort();
  for (int64_t id : t.ids)
    if (id < 0 || static_cast<size_t>(id) >= tok.vocabSize()) std::abort();
  return 0;
}
