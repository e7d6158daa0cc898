#include "torchfile/pickle.h"

#include <cstdio>
#include <cstring>
#include <map>

#include "util/error.h"

namespace sweep {

namespace {

using Kind = PyValue::Kind;

PyRef make(Kind kind) {
  auto v = std::make_shared<PyValue>();
  v->kind = kind;
  return v;
}

class Unpickler {
 public:
  Unpickler(const std::string& bytes, std::string where) : m_b(bytes), m_where(std::move(where)) {}

  PyRef run() {
    while (true) {
      const uint8_t op = byte();
      switch (op) {
        case 0x80: byte(); break;                  // PROTO
        case 0x95: take(8); break;                 // FRAME: a length, the ops follow as usual
        case '.': return pop();                    // STOP
        case '(': m_marks.push_back(m_stack.size()); break;
        case '}': push(make(Kind::dict)); break;
        case ']': push(make(Kind::list)); break;
        case ')': push(make(Kind::tuple)); break;
        case 't': push(sequence(Kind::tuple, to_mark())); break;
        case 'l': push(sequence(Kind::list, to_mark())); break;
        case 0x85: push(sequence(Kind::tuple, last(1))); break;
        case 0x86: push(sequence(Kind::tuple, last(2))); break;
        case 0x87: push(sequence(Kind::tuple, last(3))); break;
        case 'd': {
          auto dict = make(Kind::dict);
          add_pairs(dict, to_mark());
          push(dict);
          break;
        }
        case 's': {
          const PyRef dict = top_below(2, Kind::dict);
          add_pairs(dict, last(2));
          break;
        }
        case 'u': {
          auto items = to_mark();
          const PyRef dict = top_below(0, Kind::dict);
          add_pairs(dict, std::move(items));
          break;
        }
        case 'a': {
          const PyRef list = top_below(1, Kind::list);
          append(list, last(1));
          break;
        }
        case 'e': {
          auto items = to_mark();
          const PyRef list = top_below(0, Kind::list);
          append(list, std::move(items));
          break;
        }
        case 'X': push(text(u32())); break;        // BINUNICODE
        case 0x8c: push(text(byte())); break;      // SHORT_BINUNICODE
        case 0x8d: push(text(u64())); break;       // BINUNICODE8
        case 'T': push(text(u32())); break;        // BINSTRING
        case 'U': push(text(byte())); break;       // SHORT_BINSTRING
        case 'B': push(text(u32())); break;        // BINBYTES
        case 'C': push(text(byte())); break;       // SHORT_BINBYTES
        case 'J': push(integer(static_cast<int32_t>(u32()))); break;
        case 'K': push(integer(byte())); break;
        case 'M': push(integer(u16())); break;
        case 0x8a: push(long_integer(byte())); break;  // LONG1
        case 0x8b: push(long_integer(u32())); break;   // LONG4
        case 'G': {
          uint64_t bits = 0;
          for (int i = 0; i < 8; ++i) {
            bits = bits << 8 | byte();  // big-endian
          }
          auto v = make(Kind::real);
          std::memcpy(&v->real, &bits, sizeof bits);
          push(v);
          break;
        }
        case 'N': push(make(Kind::none)); break;
        case 0x88: push(boolean(true)); break;
        case 0x89: push(boolean(false)); break;
        case 'c': {
          const std::string module = line(), name = line();
          push(global(module + " " + name));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          const PyRef name = pop(), module = pop();
          if (module->kind != Kind::string || name->kind != Kind::string) {
            bad("a global named by something other than strings");
          }
          push(global(module->text + " " + name->text));
          break;
        }
        case 'R': {
          const PyRef args = pop(), callable = pop();
          push(call(callable, args));
          break;
        }
        case 0x81: {  // NEWOBJ
          const PyRef args = pop(), cls = pop();
          push(call(cls, args));
          break;
        }
        case 'b': pop(); top(); break;            // BUILD: an object's state; the values here keep none
        case 'Q': push(persistent(pop())); break;  // BINPERSID
        case 'q': memo(byte()); break;
        case 'r': memo(u32()); break;
        case 0x94: memo(m_memo.size()); break;     // MEMOIZE
        case 'h': push(recall(byte())); break;
        case 'j': push(recall(u32())); break;
        case '0': pop(); break;
        case '1': to_mark(); break;
        case '2': push(top()); break;
        default: {
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02x", op);
          bad(std::string("opcode ") + hex + " at byte " + std::to_string(m_at - 1) +
              " is not one PyTorch writes");
        }
      }
    }
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    throw Error(m_where + ": " + what + " — the file is damaged, or not a PyTorch state dict", Exit::bad_input);
  }

  uint8_t byte() {
    if (m_at >= m_b.size()) {
      bad("the pickle ends before its STOP");
    }
    return static_cast<uint8_t>(m_b[m_at++]);
  }
  std::string take(uint64_t n) {
    if (n > m_b.size() - m_at) {
      bad("a string of " + std::to_string(n) + " bytes runs past the pickle's end");
    }
    std::string out = m_b.substr(m_at, n);
    m_at += n;
    return out;
  }
  uint16_t u16() { return static_cast<uint16_t>(byte() | byte() << 8); }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      v |= static_cast<uint32_t>(byte()) << (8 * i);
    }
    return v;
  }
  uint64_t u64() { return u32() | static_cast<uint64_t>(u32()) << 32; }
  std::string line() {
    const size_t end = m_b.find('\n', m_at);
    if (end == std::string::npos || end - m_at > 256) {
      bad("a global's name does not end");
    }
    std::string out = m_b.substr(m_at, end - m_at);
    m_at = end + 1;
    return out;
  }

  void push(PyRef v) {
    if (++m_pushed > k_max_values) {  // each costs some 300 bytes: a bound on memory, far above any state dict's
      bad("more than " + std::to_string(k_max_values) + " values");
    }
    m_stack.push_back(std::move(v));
  }
  PyRef pop() {
    if (m_stack.empty() || (!m_marks.empty() && m_stack.size() <= m_marks.back())) {
      bad("an opcode takes a value the stack does not hold");
    }
    PyRef v = std::move(m_stack.back());
    m_stack.pop_back();
    return v;
  }
  PyRef top() {
    if (m_stack.empty()) {
      bad("an opcode takes a value the stack does not hold");
    }
    return m_stack.back();
  }
  // The stack's values above the last mark (the mark removed).
  std::vector<PyRef> to_mark() {
    if (m_marks.empty()) {
      bad("a MARK is missing");
    }
    const size_t from = m_marks.back();
    m_marks.pop_back();
    std::vector<PyRef> out(m_stack.begin() + static_cast<long>(from), m_stack.end());
    m_stack.resize(from);
    return out;
  }
  std::vector<PyRef> last(size_t n) {
    std::vector<PyRef> out(n);
    for (size_t i = n; i-- > 0;) {
      out[i] = pop();
    }
    return out;
  }
  // The value `skip` places below the top, which must be of `kind` (a dict for SETITEM(S)).
  PyRef top_below(size_t skip, Kind kind) {
    if (m_stack.size() <= skip) {
      bad("an opcode takes a value the stack does not hold");
    }
    PyRef v = m_stack[m_stack.size() - 1 - skip];
    if (v->kind != kind) {
      bad(std::string("items added to a ") + (kind == Kind::dict ? "dict" : "list") + " that is none");
    }
    return v;
  }

  PyRef sequence(Kind kind, std::vector<PyRef> items) {
    auto v = make(kind);
    v->items = std::move(items);
    return v;
  }
  void append(const PyRef& list, std::vector<PyRef> items) {
    for (auto& item : items) {
      list->items.push_back(std::move(item));
    }
  }
  void add_pairs(const PyRef& dict, std::vector<PyRef> items) {
    if (items.size() % 2 != 0) {
      bad("a dict's keys and values do not pair up");
    }
    for (size_t i = 0; i < items.size(); i += 2) {
      dict->entries.emplace_back(std::move(items[i]), std::move(items[i + 1]));
    }
  }

  PyRef text(uint64_t n) {
    auto v = make(Kind::string);
    v->text = take(n);
    return v;
  }
  PyRef integer(int64_t i) {
    auto v = make(Kind::integer);
    v->integer = i;
    return v;
  }
  PyRef boolean(bool b) {
    auto v = make(Kind::boolean);
    v->boolean = b;
    return v;
  }
  PyRef long_integer(uint64_t n) {  // little-endian two's complement
    if (n > 8) {
      bad("an integer of " + std::to_string(n) + " bytes (more than 64 bits)");
    }
    const std::string b = take(n);
    uint64_t u = 0;
    for (size_t i = 0; i < n; ++i) {
      u |= static_cast<uint64_t>(static_cast<uint8_t>(b[i])) << (8 * i);
    }
    if (n > 0 && n < 8 && (static_cast<uint8_t>(b[n - 1]) & 0x80) != 0) {
      u |= ~uint64_t{0} << (8 * n);  // sign-extend
    }
    return integer(static_cast<int64_t>(u));
  }
  PyRef global(const std::string& name) {
    auto v = make(Kind::global);
    v->text = name;
    return v;
  }

  void memo(uint64_t key) { m_memo[key] = top(); }
  PyRef recall(uint64_t key) {
    const auto it = m_memo.find(key);
    if (it == m_memo.end()) {
      bad("a memo entry that was never stored");
    }
    return it->second;
  }

  int64_t int_arg(const PyRef& v, const char* what) {
    if (v->kind != Kind::integer) {
      bad(std::string("a tensor's ") + what + " is not an integer");
    }
    return v->integer;
  }
  std::vector<int64_t> int_tuple(const PyRef& v, const char* what) {
    if (v->kind != Kind::tuple && v->kind != Kind::list) {
      bad(std::string("a tensor's ") + what + " is not a tuple of integers");
    }
    std::vector<int64_t> out;
    for (const auto& item : v->items) {
      out.push_back(int_arg(item, what));
    }
    return out;
  }

  // A call of a global PyTorch's files make, as the value it returns; others are opaque.
  PyRef call(const PyRef& callable, const PyRef& args) {
    if (callable->kind != Kind::global || args->kind != Kind::tuple) {
      auto v = make(Kind::opaque);
      v->text = "a call";
      return v;
    }
    const std::string& f = callable->text;
    const auto& a = args->items;
    if (f == "collections OrderedDict" && a.empty()) {
      return make(Kind::dict);
    }
    if ((f == "torch._utils _rebuild_tensor_v2" || f == "torch._utils _rebuild_tensor") && a.size() >= 4) {
      if (a[0]->kind != Kind::storage) {
        bad("a tensor whose storage is not a storage");
      }
      auto v = make(Kind::tensor);
      v->tensor.storage = a[0]->storage;
      v->tensor.offset = int_arg(a[1], "storage offset");
      v->tensor.sizes = int_tuple(a[2], "size");
      v->tensor.strides = int_tuple(a[3], "stride");
      return v;
    }
    if ((f == "torch._utils _rebuild_parameter" || f == "torch._utils _rebuild_parameter_with_state") && !a.empty() &&
        a[0]->kind == Kind::tensor) {
      return a[0];
    }
    if (f == "torch.jit._pickle restore_type_tag" && !a.empty()) {
      return a[0];
    }
    auto v = make(Kind::opaque);
    v->text = f;
    return v;
  }

  PyRef persistent(const PyRef& id) {
    const auto& a = id->items;
    if (id->kind != Kind::tuple || a.size() != 5 || a[0]->kind != Kind::string || a[0]->text != "storage" ||
        a[1]->kind != Kind::global || a[2]->kind != Kind::string || a[4]->kind != Kind::integer) {
      bad("a persistent id that is not ('storage', type, key, location, numel)");
    }
    auto v = make(Kind::storage);
    const std::string& type = a[1]->text;
    v->storage.type = type.rfind("torch ", 0) == 0 ? type.substr(6) : type;
    v->storage.key = a[2]->text;
    v->storage.numel = a[4]->integer;
    return v;
  }

  static constexpr uint64_t k_max_values = 4'000'000;
  const std::string& m_b;
  std::string m_where;
  size_t m_at = 0;
  uint64_t m_pushed = 0;
  std::vector<PyRef> m_stack;
  std::vector<size_t> m_marks;
  std::map<uint64_t, PyRef> m_memo;
};

}  // namespace

PyValue::~PyValue() {
  std::vector<PyRef> pending;
  auto adopt = [&pending](PyValue& v) {
    for (auto& item : v.items) {
      pending.push_back(std::move(item));
    }
    for (auto& [key, value] : v.entries) {
      pending.push_back(std::move(key));
      pending.push_back(std::move(value));
    }
    v.items.clear();
    v.entries.clear();
  };
  adopt(*this);
  while (!pending.empty()) {
    PyRef next = std::move(pending.back());
    pending.pop_back();
    if (next && next.use_count() == 1) {
      adopt(*next);  // its children come here first: its own destructor then has none to free
    }
  }
}

PyRef read_pickle(const std::string& bytes, const std::string& where) { return Unpickler(bytes, where).run(); }

PyRef dict_get(const PyRef& dict, const std::string& key) {
  if (!dict || dict->kind != PyValue::Kind::dict) {
    return nullptr;
  }
  for (const auto& [k, v] : dict->entries) {
    if (k->kind == PyValue::Kind::string && k->text == key) {
      return v;
    }
  }
  return nullptr;
}

}  // namespace sweep
