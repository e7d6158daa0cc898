// PyTorch files from outside (src/torchfile): a valid file read as written, each crafted defect
// refused with its message (a CRC that does not match, a view past its storage, a storage read as
// two types or of the wrong length, negative strides, a broadcast that would ask for terabytes, a
// cut file, an opcode PyTorch does not write, a million nested lists), and a seeded mutation
// fuzzer over valid files and shards: every case read whole or refused as bad input — no crash,
// no hang, and nothing accepted that breaks the checks. No torch: built again under ASan + UBSan.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <random>

#include "data/token_shard.h"
#include "torchfile/pickle.h"
#include "torchfile/torch_file.h"
#include "torchfile_writer.h"
#include "util/error.h"

using namespace sweep;

namespace {

// The message of the bad-input Error reading `bytes` as a PyTorch file throws ("" when none).
std::string refusal(const std::string& bytes) {
  const test::TempFile f(bytes);
  try {
    read_torch_file(f.str());
  } catch (const Error& e) {
    CHECK(e.code() == Exit::bad_input);
    return e.what();
  }
  return "";
}

// a (2, 3) matrix, its second column as a view, and a bf16 vector in a storage of its own
std::vector<test::PickledTensor> good_tensors() {
  return {{"w", "FloatStorage", "0", 6, 0, {2, 3}, {3, 1}},
          {"col", "FloatStorage", "0", 6, 1, {2}, {3}},
          {"b", "BFloat16Storage", "1", 2, 0, {2}, {1}}};
}

std::string good_file(std::vector<test::PickledTensor> tensors = good_tensors(), const std::string& bad_crc = "") {
  return test::torch_file_bytes(test::state_dict_pickle(tensors),
                                {{"0", test::float_bytes({0, 1, 2, 3, 4, 5})}, {"1", std::string("\x80\x3f\x00\x40", 4)}},
                                bad_crc);
}

// Every tensor an accepted file gives lies inside its storage (the checks, done again here).
void check_inside(const TorchFile& f) {
  for (const auto& [name, t] : f.tensors) {
    CAPTURE(name);
    REQUIRE(t.sizes.size() == t.strides.size());
    const int64_t elements = static_cast<int64_t>(t.storage->size() / t.element_size);
    CHECK(t.numel() <= elements);
    if (t.numel() > 0) {
      int64_t last = t.offset;
      for (size_t d = 0; d < t.sizes.size(); ++d) {
        last += (t.sizes[d] - 1) * t.strides[d];
      }
      CHECK(last < elements);
    }
  }
}

}  // namespace

TEST_CASE("torchfile: a state dict as torch.save writes it is read as written") {
  const test::TempFile f(good_file());
  const TorchFile file = read_torch_file(f.str());
  REQUIRE(file.tensors.size() == 3);
  CHECK(file.tensors[0].first == "w");
  CHECK(file.tensors[0].second.dtype == "float32");
  CHECK(file.tensors[0].second.sizes == std::vector<int64_t>{2, 3});
  CHECK(file.tensors[1].second.offset == 1);
  CHECK(file.tensors[1].second.storage == file.tensors[0].second.storage);  // one storage, two views
  CHECK(file.tensors[2].second.dtype == "bfloat16");
  CHECK(file.tensors[2].second.element_size == 2);
  check_inside(file);
}

TEST_CASE("torchfile: nanoGPT's checkpoint gives its model and model_args, torch.compile's prefix dropped") {
  test::PickleWriter w;
  w.op('}').op('(').str("model").global("collections", "OrderedDict").op(')').op('R').op('(');
  w.str("_orig_mod.w").tensor(good_tensors()[0]);
  w.op('u').str("model_args").op('}').op('(').str("n_head").integer(2).str("bias").op('\x88').op('u');
  w.str("iter_num").integer(5).op('u').op('.');
  const test::TempFile f(test::torch_file_bytes(w.bytes(), {{"0", test::float_bytes({0, 1, 2, 3, 4, 5})}}));
  const TorchFile file = read_torch_file(f.str());
  REQUIRE(file.tensors.size() == 1);
  CHECK(file.tensors[0].first == "w");
  CHECK(file.model_args.at("n_head") == 2);
  CHECK(file.model_args.count("bias") == 0);  // integers only
}

TEST_CASE("torchfile: each crafted defect is refused, naming the file, the tensor and what is wrong") {
  auto with = [](auto change) {
    auto tensors = good_tensors();
    change(tensors);
    return good_file(tensors);
  };
  CHECK(refusal(good_file(good_tensors(), "archive/data/0")).find("entry 'archive/data/0' does not match its CRC-32") !=
        std::string::npos);
  CHECK(refusal(with([](auto& t) { t[1].offset = 5; })).find("tensor 'col' reaches element 8 of its storage '0', "
                                                              "which has 6") != std::string::npos);
  CHECK(refusal(with([](auto& t) { t[0].sizes = {3, 3}; })).find("tensor 'w' has more elements than its storage '0' (6)") !=
        std::string::npos);
  CHECK(refusal(with([](auto& t) { t[0].strides = {4, 1}; })).find("tensor 'w' reaches element 6") != std::string::npos);
  // another type over the same bytes: the storage's length gives it away, or the other tensor
  CHECK(refusal(with([](auto& t) { t[2].storage_type = "FloatStorage"; })).find("its storage '1' holds 4 bytes, "
                                                                                "FloatStorage of 2 elements needs 4 "
                                                                                "bytes each") !=
        std::string::npos);
  CHECK(refusal(with([](auto& t) { t[1].storage_type = "IntStorage"; })).find("reads storage '0' as IntStorage, another "
                                                                             "tensor as FloatStorage") != std::string::npos);
  CHECK(refusal(with([](auto& t) { t[0].numel = 1000; })).find("holds 24 bytes, FloatStorage of 1000 elements needs 4 "
                                                               "bytes each") != std::string::npos);
  CHECK(refusal(with([](auto& t) { t[1].strides = {-3}; })).find("negative size or stride") != std::string::npos);
  CHECK(refusal(with([](auto& t) { t[1].offset = -1; })).find("negative storage offset") != std::string::npos);
  CHECK(refusal(with([](auto& t) { t[0].strides = {3}; })).find("2 sizes and 1 strides") != std::string::npos);
  // a broadcast view (stride 0) of 2^40 × 2^40 elements over 6: no allocation bomb, no overflow
  CHECK(refusal(with([](auto& t) {
          t[1].sizes = {int64_t{1} << 40, int64_t{1} << 40};
          t[1].strides = {0, 0};
        })).find("has more elements than its storage '0' (6)") != std::string::npos);
  // an empty view whose other sizes multiply past 64 bits (LibTorch would throw on it)
  CHECK(refusal(with([](auto& t) {
          t[1].sizes = {int64_t{1} << 32, int64_t{1} << 32, 0};
          t[1].strides = {0, 0, 0};
        })).find("has more elements than its storage '0'") != std::string::npos);
  // a storage of 2^62 elements by its persistent id (a 64-bit integer): no overflow in the message
  CHECK(refusal(with([](auto& t) { t[0].numel = int64_t{1} << 62; })).find("FloatStorage of 4611686018427387904 elements") !=
        std::string::npos);
  CHECK(refusal(with([](auto& t) { t[0].key = "9"; })).find("its storage '9' is not in the file") != std::string::npos);
  // a name twice: which one is meant?
  CHECK(refusal(with([](auto& t) { t[1].name = "w"; })).find("tensor 'w' is in the state dict twice") !=
        std::string::npos);
  CHECK(refusal(with([](auto& t) { t[0].storage_type = "ComplexFloatStorage"; })).find("which sweep does not read") !=
        std::string::npos);
  // the container
  const std::string file = good_file();
  CHECK(refusal(file.substr(0, file.size() / 2)).find("not a zip archive") != std::string::npos);
  CHECK(refusal(file.substr(0, file.size() - 5)).find("not a zip archive") != std::string::npos);
  CHECK(refusal("just text").find("not a zip archive") != std::string::npos);
  CHECK(refusal(test::zip_of({{"x/other.txt", "hi"}})).find("a zip without data.pkl") != std::string::npos);
  // two entries of one name; two entries over the same bytes (a small file read as many big ones)
  CHECK(refusal(test::zip_of({{"a/data.pkl", "x"}, {"a/data.pkl", "y"}})).find("two entries named 'a/data.pkl'") !=
        std::string::npos);
  {
    std::string overlapping = test::zip_of({{"a/data/0", std::string(64, 'x')}, {"a/data/1", std::string(64, 'x')}});
    const size_t second = overlapping.find("PK\x01\x02", overlapping.find("PK\x01\x02") + 4);
    overlapping.replace(second + 42, 4, std::string(4, '\0'));  // its local header: the first entry's
    CHECK(refusal(overlapping).find("entries 'a/data/0' and 'a/data/1' overlap") != std::string::npos);
  }
  // a tensor in a wrapper sweep does not read: refused by name, not dropped
  {
    test::PickleWriter w;
    w.global("collections", "OrderedDict").op(')').op('R').op('(');
    w.str("w").tensor(good_tensors()[0]);
    w.str("odd").global("torch._tensor", "_rebuild_from_type_v2").op(')').op('R');
    w.op('u').op('.');
    CHECK(refusal(test::torch_file_bytes(w.bytes(), {{"0", test::float_bytes({0, 1, 2, 3, 4, 5})}}))
              .find("'odd' is made by torch._tensor _rebuild_from_type_v2, which sweep does not read") !=
          std::string::npos);
  }
  // a tensor under an integer key: no name reaches it, so it is refused, not silently left out
  {
    test::PickleWriter w;
    w.global("collections", "OrderedDict").op(')').op('R').op('(');
    w.str("w").tensor(good_tensors()[0]);
    w.integer(7).tensor(good_tensors()[1]);
    w.op('u').op('.');
    CHECK(refusal(test::torch_file_bytes(w.bytes(), {{"0", test::float_bytes({0, 1, 2, 3, 4, 5})}}))
              .find("a tensor is stored under a key that is no name (the integer 7)") != std::string::npos);
  }
  // the pickle: cut, an opcode PyTorch never writes, a memo read before it was written, no dict
  const std::string pickle = test::state_dict_pickle(good_tensors());
  auto pickled = [](const std::string& p) { return test::torch_file_bytes(p, {{"0", test::float_bytes({0, 1, 2, 3, 4, 5})}}); };
  CHECK(refusal(pickled(pickle.substr(0, pickle.size() - 3))).find("ends before its STOP") != std::string::npos);
  CHECK(refusal(pickled(std::string("\x80\x02i", 3))).find("opcode 0x69 at byte 2 is not one PyTorch writes") !=
        std::string::npos);
  CHECK(refusal(pickled(std::string("\x80\x02h\x07.", 5))).find("a memo entry that was never stored") !=
        std::string::npos);
  CHECK(refusal(pickled(std::string("\x80\x02K\x05.", 5))).find("is not a PyTorch state dict") != std::string::npos);
}

TEST_CASE("torchfile: a million nested lists are refused without exhausting the stack") {
  std::string p("\x80\x02", 2);
  const int depth = 1000000;
  p += std::string(depth, ']');
  p += std::string(depth - 1, 'a');
  p += '.';
  const std::string why = [&] {
    try {
      read_pickle(p, "deep.pkl");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("read");  // a list is a value: read, then freed one by one
  }();
  CHECK(why == "read");
  CHECK(refusal(test::torch_file_bytes(p, {})).find("is not a PyTorch state dict") != std::string::npos);
}

TEST_CASE("torchfile: fuzzed files — byte flips, cuts, edited pickle fields — are read or refused, never more") {
  // SWEEP_FUZZ_SEED varies the cases; the time limit bounds them (the count is printed)
  const char* seed_env = std::getenv("SWEEP_FUZZ_SEED");
  std::mt19937_64 rng(seed_env != nullptr ? std::strtoull(seed_env, nullptr, 10) : 20261124);
  const std::string pickle = test::state_dict_pickle(good_tensors());
  const std::vector<std::pair<std::string, std::string>> storages{{"0", test::float_bytes({0, 1, 2, 3, 4, 5})},
                                                                   {"1", std::string("\x80\x3f\x00\x40", 4)}};
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  int cases = 0, read = 0;
  while (cases < 4000 && std::chrono::steady_clock::now() < until) {
    std::string bytes;
    switch (rng() % 4) {
      case 0: {  // bytes of the whole file flipped (CRCs and the zip's structure catch them)
        bytes = test::torch_file_bytes(pickle, storages);
        for (int k = 0, n = 1 + static_cast<int>(rng() % 4); k < n; ++k) {
          bytes[rng() % bytes.size()] ^= static_cast<char>(1 + rng() % 255);
        }
        break;
      }
      case 1:  // cut anywhere
        bytes = test::torch_file_bytes(pickle, storages);
        bytes.resize(rng() % bytes.size());
        break;
      case 2: {  // the pickle edited, with correct CRCs: only the reader's checks stand in the way
        std::string p = pickle;
        for (int k = 0, n = 1 + static_cast<int>(rng() % 3); k < n; ++k) {
          p[rng() % p.size()] = static_cast<char>(rng() % 256);
        }
        bytes = test::torch_file_bytes(p, storages);
        break;
      }
      default: {  // a pickle field set to an extreme integer (offsets, sizes, strides, numels)
        std::string p = pickle;
        std::vector<size_t> ints;
        for (size_t i = 0; i + 5 <= p.size(); ++i) {
          if (p[i] == 'J') {
            ints.push_back(i);
          }
        }
        const int32_t extremes[] = {0, 1, -1, 2, 7, 1 << 20, INT32_MAX, INT32_MIN};
        const int32_t v = extremes[rng() % 8];
        std::memcpy(&p[ints[rng() % ints.size()] + 1], &v, 4);
        bytes = test::torch_file_bytes(p, storages);
      }
    }
    const test::TempFile f(bytes);
    try {
      check_inside(read_torch_file(f.str()));
      ++read;
    } catch (const Error& e) {
      CHECK(e.code() == Exit::bad_input);
      // refused for what is in it, never because the test ran out of something (descriptors)
      CHECK(std::string(e.what()).find("cannot read it") == std::string::npos);
    }
    ++cases;
  }
  MESSAGE(cases, " fuzzed PyTorch files: ", read, " read whole (each inside its storages), the rest refused");
  CHECK(cases >= 500);
}

TEST_CASE("shards: fuzzed token shards are read whole or refused, never out of bounds") {
  std::mt19937_64 rng(7);
  std::vector<uint16_t> tokens(300);
  for (auto& t : tokens) {
    t = static_cast<uint16_t>(rng() % 50);
  }
  const auto base = std::filesystem::temp_directory_path() / ("sweep-shard-fuzz-" + std::to_string(::getpid()) + ".bin");
  write_shard(base.string(), tokens);
  std::string clean;
  {
    std::ifstream in(base, std::ios::binary);
    clean.assign(std::istreambuf_iterator<char>(in), {});
  }
  int cases = 0, read = 0;
  for (; cases < 1500; ++cases) {
    std::string bytes = clean;
    if (rng() % 2 == 0) {
      bytes.resize(rng() % bytes.size());
    } else {
      for (int k = 0, n = 1 + static_cast<int>(rng() % 4); k < n; ++k) {
        // mostly the 1 KiB header: magic, version, count
        bytes[rng() % 3 == 0 ? rng() % bytes.size() : rng() % 16] ^= static_cast<char>(1 + rng() % 255);
      }
    }
    std::ofstream(base, std::ios::binary | std::ios::trunc) << bytes;
    try {
      const auto got = read_shard(base.string(), 50);
      for (const uint16_t t : got) {
        CHECK(t < 50);
      }
      ++read;
    } catch (const Error& e) {
      CHECK(e.code() == Exit::bad_input);
    }
  }
  std::filesystem::remove(base);
  MESSAGE(cases, " fuzzed shards: ", read, " read whole, the rest refused");
}
