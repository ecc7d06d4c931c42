// pipeline/clip_tokenizer.*: every case of tests/data/clip-tokenizer/cases.json (ids
// from transformers 5.17 CLIPTokenizer) and the loader's errors.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "pipeline/clip_tokenizer.h"
#include "runtime/atomic_file.h"
#include "test_support.h"

using sdspeed::ClipTokenizer;
using sdspeed_test::errorMessage;
using sdspeed_test::TempDir;

namespace {
const std::string kDir = std::string(SDSPEED_TEST_DATA) + "/clip-tokenizer";
}

TEST(ClipTokenizer, AllFixtureCases) {
  ClipTokenizer tok = ClipTokenizer::fromFolder(kDir);
  EXPECT_EQ(tok.bos(), 912);
  EXPECT_EQ(tok.eos(), 913);
  EXPECT_EQ(tok.vocabSize(), 914u);
  std::string text;
  ASSERT_TRUE(sdspeed::readFile(kDir + "/cases.json", text));
  nlohmann::json cases = nlohmann::json::parse(text);
  ASSERT_EQ(cases.size(), 46u);
  int passed = 0;
  for (const auto& c : cases) {
    const std::string s = c["text"].get<std::string>();
    sdspeed::ClipTokens t = tok.tokenize(s);
    std::vector<int64_t> want = c["input_ids"].get<std::vector<int64_t>>();
    bool ok = t.ids == want && t.tokensBeforePadding == c["n_tokens_before_padding"].get<int>() &&
              t.tokensUntruncated == c["n_tokens_untruncated"].get<int>();
    if (!ok) {
      std::string got;
      for (int i = 0; i < t.tokensBeforePadding; ++i) got.append("[").append(tok.token(t.ids[i])).append("]");
      ADD_FAILURE() << "case '" << c["note"].get<std::string>() << "' text " << c["text"].dump()
                    << "\n  got tokens " << got << "\n  want tokens " << c["tokens"].dump() << "\n  counts "
                    << t.tokensBeforePadding << "/" << t.tokensUntruncated;
    }
    EXPECT_EQ(t.truncated(), c["n_tokens_untruncated"].get<int>() > 77);
    passed += ok;
  }
  EXPECT_EQ(passed, 46);
}

TEST(ClipTokenizer, FramingAndPadding) {
  ClipTokenizer tok = ClipTokenizer::fromFolder(kDir);
  sdspeed::ClipTokens empty = tok.tokenize("");
  EXPECT_EQ(empty.ids.size(), 77u);
  EXPECT_EQ(empty.ids[0], 912);
  for (size_t i = 1; i < 77; ++i) EXPECT_EQ(empty.ids[i], 913);
  EXPECT_EQ(empty.tokensBeforePadding, 2);
  sdspeed::ClipTokens shortMax = tok.tokenize("a b c d e f", 5);
  EXPECT_EQ(shortMax.ids.size(), 5u);
  EXPECT_EQ(shortMax.ids.back(), 913);
  EXPECT_TRUE(shortMax.truncated());
  EXPECT_CONTAINS(errorMessage([&] { tok.tokenize("x", 1); }), "max length 1");
  // Invalid UTF-8 does not throw (becomes U+FFFD).
  EXPECT_EQ(tok.tokenize(std::string("a\xff\xfe b", 5)).ids.size(), 77u);
}

TEST(ClipTokenizer, LoaderErrors) {
  TempDir dir;
  auto write = [&](const std::string& name, const std::string& content) {
    std::ofstream(dir.path() + "/" + name, std::ios::binary) << content;
    return dir.path() + "/" + name;
  };
  EXPECT_CONTAINS(errorMessage([&] { ClipTokenizer(dir.path() + "/none.json", kDir + "/merges.txt"); }),
                  "none.json': cannot read");
  EXPECT_CONTAINS(errorMessage([&] { ClipTokenizer(write("v.json", "{"), kDir + "/merges.txt"); }),
                  "v.json': not valid JSON");
  EXPECT_CONTAINS(errorMessage([&] { ClipTokenizer(write("v2.json", R"({"a": 0})"), kDir + "/merges.txt"); }),
                  "byte symbol");
  std::string vocab;
  ASSERT_TRUE(sdspeed::readFile(kDir + "/vocab.json", vocab));
  std::string vpath = write("vocab.json", vocab);
  EXPECT_CONTAINS(errorMessage([&] { ClipTokenizer(vpath, write("m.txt", "#version: 0.2\nt h\nbad\n")); }),
                  "m.txt': line 3: expected 'a b', got 'bad'");
  EXPECT_CONTAINS(errorMessage([&] { ClipTokenizer(vpath, write("m2.txt", "#version: 0.2\nq z\n")); }),
                  "line 2: merge result 'qz' is not in the vocabulary");
}

TEST(ClipTokenizer, PreTokenizer) {
  EXPECT_EQ(sdspeed::clipPreTokenize("It's  A\tTEST, 42!"),
            (std::vector<std::string>{"it", "'s", "a", "test", ",", "4", "2", "!"}));
  EXPECT_EQ(sdspeed::clipPreTokenize("<|ENDOFTEXT|>"), (std::vector<std::string>{"<|", "endoftext", "|>"}));
}
