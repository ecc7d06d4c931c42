// The hand-written RFC 4180 CSV writer and parser (tuning/csv.h).
#include <gtest/gtest.h>

#include "runtime/opencl/cl_error.h"
#include "test_support.h"
#include "tuning/csv.h"

using namespace sdspeed;
using Rows = std::vector<std::vector<std::string>>;

TEST(CsvRow, PlainFieldsAreNotQuoted) {
  EXPECT_EQ(csvRow({"device", "op", "variant"}), "device,op,variant\n");
  EXPECT_EQ(csvRow({"a b", "1.5e-05", "x=1;y=2"}), "a b,1.5e-05,x=1;y=2\n");
  EXPECT_EQ(csvRow({"only"}), "only\n");
}

TEST(CsvRow, EmptyFields) {
  EXPECT_EQ(csvRow({"", "", ""}), ",,\n");
  EXPECT_EQ(csvRow({"a", "", "b"}), "a,,b\n");
  EXPECT_EQ(csvRow({"", "z"}), ",z\n");
}

TEST(CsvRow, QuotesFieldsWithSpecialCharacters) {
  EXPECT_EQ(csvRow({"a,b", "c"}), "\"a,b\",c\n");
  EXPECT_EQ(csvRow({"say \"hi\""}), "\"say \"\"hi\"\"\"\n");
  EXPECT_EQ(csvRow({"\""}), "\"\"\"\"\n");
  EXPECT_EQ(csvRow({"line1\nline2", "x"}), "\"line1\nline2\",x\n");
  EXPECT_EQ(csvRow({"cr\rhere"}), "\"cr\rhere\"\n");
  EXPECT_EQ(csvRow({"NWG=128,SPLIT=8", "ok"}), "\"NWG=128,SPLIT=8\",ok\n");
}

TEST(CsvParse, SimpleAndQuoted) {
  EXPECT_EQ(csvParse("a,b\nc,d\n"), (Rows{{"a", "b"}, {"c", "d"}}));
  EXPECT_EQ(csvParse("\"a,b\",\"say \"\"hi\"\"\"\n"), (Rows{{"a,b", "say \"hi\""}}));
  EXPECT_EQ(csvParse("\"multi\nline\",x\n"), (Rows{{"multi\nline", "x"}}));
  EXPECT_EQ(csvParse(""), Rows{});
}

TEST(CsvParse, LastLineWithoutNewline) {
  EXPECT_EQ(csvParse("a,b\nc,d"), (Rows{{"a", "b"}, {"c", "d"}}));
  EXPECT_EQ(csvParse("a,\"b\""), (Rows{{"a", "b"}}));
}

TEST(CsvParse, CrLfLineEndings) {
  EXPECT_EQ(csvParse("a,b\r\nc,d\r\n"), (Rows{{"a", "b"}, {"c", "d"}}));
  EXPECT_EQ(csvParse("a,b\r\nc,d"), (Rows{{"a", "b"}, {"c", "d"}}));
  // A CRLF inside quotes is data, not a row end.
  EXPECT_EQ(csvParse("\"x\r\ny\",z\r\nw\r\n"), (Rows{{"x\r\ny", "z"}, {"w"}}));
  // Mixed endings in one document.
  EXPECT_EQ(csvParse("a\r\nb\nc\r\n"), (Rows{{"a"}, {"b"}, {"c"}}));
}

TEST(CsvParse, EmptyFields) {
  EXPECT_EQ(csvParse("a,,b\n,\n"), (Rows{{"a", "", "b"}, {"", ""}}));
  EXPECT_EQ(csvParse(",,\r\n"), (Rows{{"", "", ""}}));
  EXPECT_EQ(csvParse("\"\",x\n"), (Rows{{"", "x"}}));
  EXPECT_EQ(csvParse("a,\n"), (Rows{{"a", ""}}));
}

TEST(CsvParse, UnterminatedQuoteThrows) {
  for (const std::string bad : {"\"abc", "a,\"bc\nd,e\n", "\"a\"\"", "x,\"", "\"a\r\n"}) {
    SCOPED_TRACE(bad);
    try {
      csvParse(bad);
      ADD_FAILURE() << "no exception";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("unterminated"), std::string::npos) << e.what();
    }
  }
}

TEST(Csv, RandomRoundTrip) {
  SDSPEED_SEEDED_RNG(rng);
  // Characters that need quoting are over-represented.
  const std::string alphabet = ",,\"\"\r\n\n ab;=.-9x";
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<int> fieldLen(0, 6), fieldCount(1, 6), rowCount(1, 20);
  for (int doc = 0; doc < 200; ++doc) {
    Rows rows(static_cast<size_t>(rowCount(rng)));
    std::string text;
    for (auto& row : rows) {
      row.resize(static_cast<size_t>(fieldCount(rng)));
      for (auto& f : row) {
        const int len = fieldLen(rng);
        for (int i = 0; i < len; ++i) f += alphabet[pick(rng)];
      }
      text += csvRow(row);
    }
    ASSERT_EQ(csvParse(text), rows) << "document:\n" << text;
    // The same document with CRLF row ends parses the same (fields keep their own bytes).
    std::string crlf;
    for (const auto& row : rows) {
      std::string line = csvRow(row);
      line.pop_back();
      crlf += line + "\r\n";
    }
    ASSERT_EQ(csvParse(crlf), rows) << "document:\n" << crlf;
  }
}
