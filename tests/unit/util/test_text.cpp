#include <doctest/doctest.h>

#include <cmath>

#include "config/size.h"
#include "util/hash.h"
#include "util/text.h"

using namespace sweep;

TEST_CASE("edit distance and did-you-mean") {
  CHECK(edit_distance("lr", "lr") == 0);
  CHECK(edit_distance("lrr", "lr") == 1);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(closest_match("lrr", {"lr", "min_lr", "tokens"}) == "lr");
  CHECK(closest_match("n_layers", {"n_layer", "n_head"}) == "n_layer");
  CHECK(closest_match("zzzzzz", {"lr", "tokens"}).empty());
}

TEST_CASE("sizes with suffixes") {
  CHECK(parse_size("5M") == 5'000'000);
  CHECK(parse_size("128K") == 128'000);
  CHECK(parse_size("64Ki") == 65'536);
  CHECK(parse_size("1Mi") == 1'048'576);
  CHECK(parse_size("2.5M") == 2'500'000);
  CHECK(parse_size("5e6") == 5'000'000);
  CHECK(parse_size("131072") == 131'072);
  CHECK_FALSE(parse_size("5X"));
  CHECK_FALSE(parse_size("-3"));
  CHECK_FALSE(parse_size("1.5"));
  CHECK_FALSE(parse_size(""));
  CHECK_FALSE(parse_size("M"));
}

TEST_CASE("sha256 matches the FIPS 180-2 test vector") {
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("split and trim") {
  CHECK(split("train.lr", '.') == std::vector<std::string>{"train", "lr"});
  CHECK(trim("  a b \n") == "a b");
}

TEST_CASE("UTF-8 validation: the first bad byte, overlong forms and surrogates included") {
  CHECK(invalid_utf8_at("plain ascii") == std::string::npos);
  CHECK(invalid_utf8_at("gr\xc3\xbc\xc3\x9f dich, \xe2\x82\xac, \xf0\x9f\x98\x80") == std::string::npos);
  CHECK(invalid_utf8_at("ab\xff") == 2);
  CHECK(invalid_utf8_at("a\xc3") == 1);             // cut short
  CHECK(invalid_utf8_at("\xc0\xaf") == 0);          // overlong '/'
  CHECK(invalid_utf8_at("x\xed\xa0\x80") == 1);     // a surrogate
  CHECK(invalid_utf8_at("\xf4\x90\x80\x80") == 0);  // past U+10FFFF
}

TEST_CASE("printable: escape sequences cannot reach the terminal") {
  CHECK(printable("red \x1b[31mtext\r") == "red \\x1b[31mtext\\x0d");
  CHECK(printable("two\nlines\tkept") == "two\nlines\tkept");
  CHECK(printable("two\nlines", false) == "two\\x0alines");
  CHECK(printable("8-bit \xc2\x9b" "31m, \xe2\x80\xae" "evil, caf\xc3\xa9") == "8-bit \\x9b31m, \\u{202e}evil, caf\xc3\xa9");
}

TEST_CASE("format_number: a fixed-point spec of a huge value is written as an exponent, not hundreds of digits") {
  CHECK(format_number("%.4f", 2.5) == "2.5000");
  CHECK(format_number("%.4f", 1e300) == "1e+300");
  CHECK(format_number("%+.4f", -3e12) == "-3e+12");
  CHECK(format_number("%+.4f", 3e12) == "+3e+12");
  CHECK(format_number("%.4f", NAN) == "-");
  CHECK(format_number("%g", 1e300) == "1e+300");
}
