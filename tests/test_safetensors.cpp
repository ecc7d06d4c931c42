// pipeline/safetensors.*: reading the tiny-sd-a fixture, one clear Error per kind of
// corrupted file (made here), dtype conversions and the atomic writer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "pipeline/safetensors.h"
#include "runtime/atomic_file.h"
#include "test_support.h"

using sdspeed::StDType;
using sdspeed::SafetensorsFile;
using sdspeed::SafetensorsWriter;
using sdspeed_test::errorMessage;
using sdspeed_test::Half;
using sdspeed_test::TempDir;

namespace {

const std::string kReference = std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a/reference.safetensors";

// A safetensors file from a header text and `dataBytes` bytes of data (value = index).
std::string rawFile(const std::string& header, size_t dataBytes) {
  uint64_t len = header.size();
  std::string out(reinterpret_cast<const char*>(&len), 8);
  out += header;
  for (size_t i = 0; i < dataBytes; ++i) out.push_back(static_cast<char>(i));
  return out;
}

std::string writeRaw(const TempDir& dir, const std::string& content, const std::string& name = "t.safetensors") {
  std::string path = dir.path() + "/" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

// The Error message opening a file with this content.
std::string openError(const std::string& content) {
  TempDir dir;
  std::string path = writeRaw(dir, content);
  std::string msg = errorMessage([&] { SafetensorsFile f(path); });
  EXPECT_CONTAINS(msg, "safetensors '" + path + "'");  // the message names the file
  return msg;
}

}  // namespace

TEST(Safetensors, ReadsTheFixture) {
  SafetensorsFile f(kReference);
  EXPECT_EQ(f.tensors().size(), 55u);
  EXPECT_EQ(f.metadata().at("seed"), "1234");
  EXPECT_EQ(f.metadata().at("batch_order"), "uncond,cond");
  EXPECT_FALSE(f.contains("__metadata__"));

  const auto& ids = f.info("input_ids_cond");
  EXPECT_EQ(ids.dtype, StDType::I64);
  EXPECT_EQ(ids.shape, (std::vector<int64_t>{1, 77}));
  std::vector<int64_t> cond = f.toInt64("input_ids_cond");
  ASSERT_EQ(cond.size(), 77u);
  std::vector<int64_t> head(cond.begin(), cond.begin() + 10);
  EXPECT_EQ(head, (std::vector<int64_t>{0, 201, 888, 641, 766, 85, 445, 885, 2, 1}));
  EXPECT_EQ(cond.back(), 1);

  std::vector<float> lat = f.toFloat("init_latents");
  ASSERT_EQ(lat.size(), 1024u);
  EXPECT_EQ(f.info("init_latents").shape, (std::vector<int64_t>{1, 4, 16, 16}));
  EXPECT_EQ(lat[0], -0.1117185652256012f);
  EXPECT_EQ(lat[1], -0.49659010767936707f);
  EXPECT_EQ(lat[1023], -0.35271623730659485f);

  EXPECT_EQ(f.toInt64("pndm_timesteps"), (std::vector<int64_t>{751, 501, 501, 251, 1}));
  std::vector<float> sigmas = f.toFloat("euler_sigmas");
  EXPECT_EQ(sigmas, (std::vector<float>{14.614646911621094f, 2.9183084964752197f, 0.9323583245277405f,
                                        0.029167532920837402f, 0.0f}));
  EXPECT_EQ(f.toFloat("ddim_timesteps"), (std::vector<float>{751, 501, 251, 1}));  // int -> float on request
  EXPECT_EQ(f.bytes("init_latents").size(), 4096u);

  // Tensors come in data order and tile the data section.
  size_t expected = 0;
  for (const auto& t : f.tensors()) {
    EXPECT_EQ(t.begin, expected) << t.name;
    expected = t.end;
  }
}

TEST(Safetensors, ReadsTheModelWeights) {
  SafetensorsFile f(std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a/text_encoder/model.safetensors");
  int64_t params = 0;
  for (const auto& t : f.tensors()) params += t.numel();
  EXPECT_EQ(params, 48106);  // the fixture README's parameter count
}

TEST(Safetensors, LookupErrorsNameFileAndTensor) {
  SafetensorsFile f(kReference);
  std::string msg = errorMessage([&] { f.info("nope"); });
  EXPECT_CONTAINS(msg, kReference);
  EXPECT_CONTAINS(msg, "tensor 'nope': no such tensor");
  msg = errorMessage([&] { f.toInt64("init_latents"); });
  EXPECT_CONTAINS(msg, "tensor 'init_latents': is F32, not an integer tensor");
}

TEST(Safetensors, MissingFile) {
  std::string msg = errorMessage([] { SafetensorsFile f("/nonexistent/x.safetensors"); });
  EXPECT_CONTAINS(msg, "'/nonexistent/x.safetensors': cannot open");
}

TEST(Safetensors, TooShortForTheHeaderLength) {
  EXPECT_CONTAINS(openError("abc"), "file is 3 bytes, too short for the 8-byte header length");
  EXPECT_CONTAINS(openError(""), "file is 0 bytes");
}

TEST(Safetensors, HeaderLengthPastTheEnd) {
  std::string content = rawFile("{}", 0);
  uint64_t huge = 1000;
  std::memcpy(content.data(), &huge, 8);
  EXPECT_CONTAINS(openError(content), "header length 1000 runs past the end of the file (10 bytes)");
  huge = ~0ull;  // no overflow in the check
  std::memcpy(content.data(), &huge, 8);
  EXPECT_CONTAINS(openError(content), "header length 18446744073709551615 runs past the end");
}

TEST(Safetensors, TruncatedRealFile) {
  std::string content;
  ASSERT_TRUE(sdspeed::readFile(kReference, content));
  content.resize(content.size() - 100);
  std::string msg = openError(content);
  EXPECT_CONTAINS(msg, "run past the end of the data");
  EXPECT_CONTAINS(msg, "tensor '");
  content.resize(4000);  // inside the header
  EXPECT_CONTAINS(openError(content), "header length 4928 runs past the end of the file (4000 bytes)");
}

TEST(Safetensors, MalformedJson) {
  EXPECT_CONTAINS(openError(rawFile("{\"a\": ", 0)), "header is not valid JSON");
  EXPECT_CONTAINS(openError(rawFile("[1, 2]", 0)), "header must be a JSON object");
  EXPECT_CONTAINS(openError(rawFile(R"({"a": 3})", 0)), "tensor 'a': entry must be an object");
  EXPECT_CONTAINS(openError(rawFile(R"({"a": {"dtype": "F32", "shape": [1]}})", 4)), "tensor 'a': missing 'data_offsets'");
  EXPECT_CONTAINS(openError(rawFile(R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4)), "tensor 'a': shape entries must be non-negative integers");
  EXPECT_CONTAINS(openError(rawFile(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", 4)), "tensor 'a': data_offsets must be [begin, end]");
  EXPECT_CONTAINS(openError(rawFile(R"({"a": {"dtype": "F32", "shape": [0], "data_offsets": [4, 0]}})", 4)), "tensor 'a': data_offsets [4, 0] end before begin");
}

TEST(Safetensors, UnknownDtype) {
  EXPECT_CONTAINS(openError(rawFile(R"({"w": {"dtype": "F8_E4M3", "shape": [4], "data_offsets": [0, 4]}})", 4)), "tensor 'w': unsupported dtype 'F8_E4M3'");
}

TEST(Safetensors, ShapeTimesDtypeSizeMismatch) {
  EXPECT_CONTAINS(openError(rawFile(R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}})", 20)), "tensor 'w': shape [2,3] x F32 (4 bytes) = 24 bytes, but data_offsets span 20 bytes");
  EXPECT_CONTAINS(openError(rawFile(
                  R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]}})", 4)), "= overflow bytes");
}

TEST(Safetensors, OffsetsOverlapGapPastEnd) {
  EXPECT_CONTAINS(openError(rawFile(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                   "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                                12)), "tensor 'b': data_offsets [4, 12] overlap tensor 'a' [0, 8]");
  EXPECT_CONTAINS(openError(rawFile(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                                   "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
                                12)), "tensor 'b': data_offsets [8, 12] leave a gap of 4 bytes after tensor 'a'");
  EXPECT_CONTAINS(openError(rawFile(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8)), "tensor 'a': data_offsets [0, 16] run past the end of the data (8 bytes after the header)");
  EXPECT_CONTAINS(openError(rawFile(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 8)), "4 bytes after the last tensor's data are not described by the header");
  // Header order is free; data order need not follow it.
  TempDir dir;
  SafetensorsFile ok(writeRaw(dir, rawFile(R"({"z": {"dtype": "I32", "shape": [1], "data_offsets": [0, 4]},
                                               "a": {"dtype": "I32", "shape": [1], "data_offsets": [4, 8]}})",
                                           8)));
  EXPECT_EQ(ok.tensors()[0].name, "z");
}

TEST(Safetensors, DuplicateNames) {
  EXPECT_CONTAINS(openError(rawFile(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                                   "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                                8)), "tensor 'a': name appears twice in the header");
}

TEST(Safetensors, ConvertsF16Bf16I32) {
  TempDir dir;
  // F16: 1.0, -2.0, 65504, smallest subnormal 2^-24, inf, 0.5 + 2^-11 (mantissa bit)
  const uint16_t half[] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00, 0x3801, 0x0200, 0x8000};
  const uint16_t bf[] = {0x3f80, 0xc049};  // 1.0, -3.140625
  const int32_t i32[] = {-7, 123456789};
  std::string header =
      R"({"__metadata__": {"k": "v", "n": 3}, "h": {"dtype": "F16", "shape": [8], "data_offsets": [0, 16]},
          "b": {"dtype": "BF16", "shape": [2], "data_offsets": [16, 20]},
          "i": {"dtype": "I32", "shape": [2], "data_offsets": [20, 28]}})";
  uint64_t len = header.size();
  std::string content(reinterpret_cast<const char*>(&len), 8);
  content += header;
  content.append(reinterpret_cast<const char*>(half), sizeof half);
  content.append(reinterpret_cast<const char*>(bf), sizeof bf);
  content.append(reinterpret_cast<const char*>(i32), sizeof i32);
  SafetensorsFile f(writeRaw(dir, content));
  EXPECT_EQ(f.metadata().size(), 1u);  // non-string metadata skipped
  std::vector<float> h = f.toFloat("h");
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], -2.0f);
  EXPECT_EQ(h[2], 65504.0f);
  EXPECT_EQ(h[3], std::ldexp(1.0f, -24));
  EXPECT_EQ(h[4], std::numeric_limits<float>::infinity());
  EXPECT_EQ(h[5], 0.5f + std::ldexp(1.0f, -11));
  EXPECT_EQ(h[6], std::ldexp(1.0f, -15));  // largest-bit subnormal
  EXPECT_TRUE(std::signbit(h[7]) && h[7] == 0.0f);
  EXPECT_EQ(f.toFloat("b"), (std::vector<float>{1.0f, -3.140625f}));
  EXPECT_EQ(f.toInt64("i"), (std::vector<int64_t>{-7, 123456789}));
  // Every subnormal and normal half round-trips through float -> half by the compiler.
  for (uint32_t bits = 0; bits < 0x7c00; ++bits) {
    float v = sdspeed::halfToFloat(static_cast<uint16_t>(bits));
    Half back = static_cast<Half>(v);
    uint16_t b;
    std::memcpy(&b, &back, 2);
    ASSERT_EQ(b, bits) << "half bits " << bits;
  }
}

TEST(Safetensors, WriterRoundTrip) {
  TempDir dir;
  SafetensorsWriter w;
  std::vector<float> lat = {1.5f, -2.25f, 3.0f, 1e-30f, -0.0f, 7.0f};
  std::vector<int64_t> ts = {999, -1, int64_t(1) << 40};
  w.add("latents", {1, 2, 3}, lat);
  w.add("timesteps", {3}, ts);
  w.add("empty", {0, 4}, std::span<const float>());
  w.setMetadata("seed", "1234");
  std::string path = dir.path() + "/sub/out.safetensors";
  w.write(path);
  SafetensorsFile f(path);
  EXPECT_EQ(f.toFloat("latents"), lat);
  EXPECT_EQ(f.info("latents").shape, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(f.toInt64("timesteps"), ts);
  EXPECT_EQ(f.info("empty").numel(), 0);
  EXPECT_EQ(f.metadata().at("seed"), "1234");
  EXPECT_EQ(f.tensors()[0].name, "latents");  // written in the order added
  uint64_t headerLen;
  std::string content;
  ASSERT_TRUE(sdspeed::readFile(path, content));
  std::memcpy(&headerLen, content.data(), 8);
  EXPECT_EQ(headerLen % 8, 0u);
  for (const auto& e : std::filesystem::directory_iterator(dir.path() + "/sub"))
    EXPECT_EQ(e.path().filename(), "out.safetensors");  // no temporary left behind
}

TEST(Safetensors, WriterErrors) {
  SafetensorsWriter w;
  std::vector<float> v(6);
  w.add("a", {2, 3}, v);
  EXPECT_CONTAINS(errorMessage([&] { w.add("a", {6}, v); }), "tensor 'a': added twice");
  EXPECT_CONTAINS(errorMessage([&] { w.add("b", {2, 2}, v); }), "tensor 'b': shape has 4 elements but 6 values given");
  EXPECT_CONTAINS(errorMessage([&] { w.add("__metadata__", {6}, v); }), "invalid tensor name");
  EXPECT_CONTAINS(errorMessage([&] { w.add("c", {-6}, v); }), "negative dimension");
}
