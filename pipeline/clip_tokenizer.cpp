#include "pipeline/clip_tokenizer.h"

#ifdef SDSPEED_HAVE_ICU

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <climits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/atomic_file.h"
#include "runtime/error.h"

namespace sdspeed {

namespace {

const char* const kBos = "<|startoftext|>";
const char* const kEos = "<|endoftext|>";

bool isLetter(UChar32 c) { return (U_GET_GC_MASK(c) & U_GC_L_MASK) != 0; }
bool isNumber(UChar32 c) { return (U_GET_GC_MASK(c) & U_GC_N_MASK) != 0; }
bool isSpace(UChar32 c) { return u_isUWhiteSpace(c) != 0; }
bool isOther(UChar32 c) { return !isSpace(c) && !isLetter(c) && !isNumber(c); }

// Step 2: NFC, whitespace runs -> " ", full lower-casing.
icu::UnicodeString normalize(std::string_view text) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status)) throw Error(std::string("CLIP tokenizer: ICU NFC unavailable: ") + u_errorName(status));
  icu::UnicodeString s = icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  icu::UnicodeString n = nfc->normalize(s, status);
  if (U_FAILURE(status)) throw Error(std::string("CLIP tokenizer: NFC failed: ") + u_errorName(status));
  icu::UnicodeString collapsed;
  bool inSpace = false;
  for (int32_t i = 0; i < n.length();) {
    UChar32 c = n.char32At(i);
    i += U16_LENGTH(c);
    if (isSpace(c)) {
      if (!inSpace) collapsed.append(static_cast<UChar>(' '));
      inSpace = true;
    } else {
      collapsed.append(c);
      inSpace = false;
    }
  }
  collapsed.toLower(icu::Locale::getRoot());
  return collapsed;
}

std::vector<UChar32> codePoints(const icu::UnicodeString& s) {
  std::vector<UChar32> cps;
  for (int32_t i = 0; i < s.length();) {
    UChar32 c = s.char32At(i);
    cps.push_back(c);
    i += U16_LENGTH(c);
  }
  return cps;
}

std::string toUtf8(const std::vector<UChar32>& cps, size_t begin, size_t end) {
  icu::UnicodeString u;
  for (size_t i = begin; i < end; ++i) u.append(cps[i]);
  std::string out;
  u.toUTF8String(out);
  return out;
}

bool startsWith(const std::vector<UChar32>& cps, size_t i, std::string_view ascii) {
  if (i + ascii.size() > cps.size()) return false;
  for (size_t k = 0; k < ascii.size(); ++k)
    if (cps[i + k] != static_cast<UChar32>(static_cast<unsigned char>(ascii[k]))) return false;
  return true;
}

// Length of a contraction ('s 't 're 've 'm 'll 'd) at i, else 0.
size_t contraction(const std::vector<UChar32>& cps, size_t i) {
  for (std::string_view c : {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"})
    if (startsWith(cps, i, c)) return c.size();
  return 0;
}

template <typename Pred>
size_t runOf(const std::vector<UChar32>& cps, size_t i, Pred pred) {
  size_t j = i;
  while (j < cps.size() && pred(cps[j])) ++j;
  return j - i;
}

// GPT-2's pattern on one CLIP piece (which holds no whitespace):
// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+
void gpt2Split(const std::vector<UChar32>& cps, size_t begin, size_t end, std::vector<std::string>& out) {
  std::vector<UChar32> piece(cps.begin() + begin, cps.begin() + end);
  for (size_t i = 0; i < piece.size();) {
    size_t n = contraction(piece, i);
    if (!n) n = runOf(piece, i, isLetter);
    if (!n) n = runOf(piece, i, isNumber);
    if (!n) n = runOf(piece, i, isOther);
    if (!n) n = 1;  // whitespace cannot occur here; never loop forever
    out.push_back(toUtf8(piece, i, i + n));
    i += n;
  }
}

// byte -> its byte-to-unicode symbol (UTF-8), CLIP's bytes_to_unicode().
const std::vector<std::string>& byteSymbols() {
  static const std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      bool self = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
      UChar32 cp = self ? b : next++;
      std::string s;
      icu::UnicodeString(cp).toUTF8String(s);
      t[b] = s;
    }
    return t;
  }();
  return table;
}

}  // namespace

std::vector<std::string> clipPreTokenize(std::string_view text) {
  std::vector<UChar32> cps = codePoints(normalize(text));
  std::vector<std::string> pieces;
  for (size_t i = 0; i < cps.size();) {
    size_t n = 0;
    if (startsWith(cps, i, kBos)) n = std::char_traits<char>::length(kBos);
    else if (startsWith(cps, i, kEos)) n = std::char_traits<char>::length(kEos);
    if (!n) n = contraction(cps, i);
    if (!n) n = runOf(cps, i, isLetter);
    if (!n && isNumber(cps[i])) n = 1;  // one digit per piece
    if (!n) n = runOf(cps, i, isOther);
    if (!n) {  // whitespace: dropped
      ++i;
      continue;
    }
    gpt2Split(cps, i, i + n, pieces);
    i += n;
  }
  return pieces;
}

ClipTokenizer::ClipTokenizer(const std::string& vocabPath, const std::string& mergesPath) {
  std::string text;
  if (!readFile(vocabPath, text)) throw Error("CLIP vocabulary '" + vocabPath + "': cannot read");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error("CLIP vocabulary '" + vocabPath + "': not valid JSON: " + e.what());
  }
  if (!j.is_object() || j.empty()) throw Error("CLIP vocabulary '" + vocabPath + "': must be a JSON object token -> id");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > INT32_MAX)
      throw Error("CLIP vocabulary '" + vocabPath + "': token '" + it.key() + "': id must be a non-negative integer");
    int64_t id = it->get<int64_t>();
    vocab_[it.key()] = id;
    if (byId_.size() <= static_cast<size_t>(id)) byId_.resize(static_cast<size_t>(id) + 1);
    byId_[static_cast<size_t>(id)] = it.key();
  }
  for (const std::string& s : byteSymbols())
    for (const std::string& t : {s, s + "</w>"})
      if (!vocab_.count(t)) throw Error("CLIP vocabulary '" + vocabPath + "': byte symbol '" + t + "' missing");
  if (!vocab_.count(kBos) || !vocab_.count(kEos))
    throw Error("CLIP vocabulary '" + vocabPath + "': missing " + kBos + " or " + kEos);
  bos_ = vocab_.at(kBos);
  eos_ = vocab_.at(kEos);

  if (!readFile(mergesPath, text)) throw Error("CLIP merges '" + mergesPath + "': cannot read");
  std::istringstream in(text);
  std::string line;
  int lineNo = 0, rank = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (lineNo == 1 && line.rfind("#version", 0) == 0) continue;
    if (line.empty()) continue;
    size_t sp = line.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 == line.size() || line.find(' ', sp + 1) != std::string::npos)
      throw Error("CLIP merges '" + mergesPath + "': line " + std::to_string(lineNo) + ": expected 'a b', got '" +
                  line + "'");
    std::string a = line.substr(0, sp), b = line.substr(sp + 1);
    if (!vocab_.count(a + b))
      throw Error("CLIP merges '" + mergesPath + "': line " + std::to_string(lineNo) + ": merge result '" + a + b +
                  "' is not in the vocabulary");
    ranks_.emplace(std::make_pair(std::move(a), std::move(b)), rank++);  // the first of duplicates wins
  }
}

ClipTokenizer ClipTokenizer::fromFolder(const std::string& dir) {
  return ClipTokenizer(dir + "/vocab.json", dir + "/merges.txt");
}

std::string ClipTokenizer::token(int64_t id) const {
  return id >= 0 && static_cast<size_t>(id) < byId_.size() ? byId_[static_cast<size_t>(id)] : std::string();
}

void ClipTokenizer::bpe(const std::string& piece, std::vector<int64_t>& out) const {
  std::vector<std::string> word;
  for (unsigned char b : piece) word.push_back(byteSymbols()[b]);
  if (word.empty()) return;
  word.back() += "</w>";
  while (word.size() > 1) {
    int best = INT_MAX;
    const std::pair<std::string, std::string>* bestPair = nullptr;
    for (size_t i = 0; i + 1 < word.size(); ++i) {
      auto it = ranks_.find({word[i], word[i + 1]});
      if (it != ranks_.end() && it->second < best) {
        best = it->second;
        bestPair = &it->first;
      }
    }
    if (!bestPair) break;
    std::vector<std::string> merged;
    for (size_t i = 0; i < word.size();) {
      if (i + 1 < word.size() && word[i] == bestPair->first && word[i + 1] == bestPair->second) {
        merged.push_back(word[i] + word[i + 1]);
        i += 2;
      } else {
        merged.push_back(word[i++]);
      }
    }
    word = std::move(merged);
  }
  for (const std::string& sym : word) {
    auto it = vocab_.find(sym);
    out.push_back(it == vocab_.end() ? eos_ : it->second);  // unk = <|endoftext|>; cannot happen for byte symbols
  }
}

std::vector<int64_t> ClipTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> ids;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t b = text.find(kBos, pos), e = text.find(kEos, pos);
    size_t next = std::min(b, e);
    std::string_view chunk = text.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos);
    for (const std::string& piece : clipPreTokenize(chunk)) bpe(piece, ids);
    if (next == std::string_view::npos) break;
    ids.push_back(next == b ? bos_ : eos_);
    pos = next + (next == b ? std::char_traits<char>::length(kBos) : std::char_traits<char>::length(kEos));
  }
  return ids;
}

ClipTokens ClipTokenizer::tokenize(std::string_view text, int maxLength) const {
  if (maxLength < 2) throw Error("CLIP tokenizer: max length " + std::to_string(maxLength) + " leaves no room for BOS and EOS");
  std::vector<int64_t> ids = encode(text);
  ClipTokens t;
  t.tokensUntruncated = static_cast<int>(ids.size()) + 2;
  const size_t keep = std::min(ids.size(), static_cast<size_t>(maxLength - 2));
  t.ids.push_back(bos_);
  t.ids.insert(t.ids.end(), ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(keep));
  t.ids.push_back(eos_);
  t.tokensBeforePadding = static_cast<int>(t.ids.size());
  t.ids.resize(static_cast<size_t>(maxLength), pad());
  return t;
}

}  // namespace sdspeed

#else  // built without ICU (a GPU machine's image without libicu-dev): no tokenizer

#include "runtime/error.h"

namespace sdspeed {

namespace {
[[noreturn]] void noIcu() {
  throw Error("this sdspeed was built without ICU (libicu-dev): no CLIP tokenizer; give --input-ids or use "
              "--random-weights on a model without tokenizer/");
}
}  // namespace

ClipTokenizer::ClipTokenizer(const std::string&, const std::string&) { noIcu(); }
ClipTokenizer ClipTokenizer::fromFolder(const std::string&) { noIcu(); }
std::string ClipTokenizer::token(int64_t) const { noIcu(); }
void ClipTokenizer::bpe(const std::string&, std::vector<int64_t>&) const { noIcu(); }
std::vector<int64_t> ClipTokenizer::encode(std::string_view) const { noIcu(); }
ClipTokens ClipTokenizer::tokenize(std::string_view, int) const { noIcu(); }

}  // namespace sdspeed

#endif
