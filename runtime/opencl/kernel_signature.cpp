#include "runtime/opencl/kernel_signature.h"

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include "runtime/error.h"

namespace sdspeed {
namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// Comments replaced by a space (a signature may carry them between parameters).
std::string stripComments(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, 2, "//") == 0) {
      i = s.find('\n', i);
      if (i == std::string::npos) break;
    } else if (s.compare(i, 2, "/*") == 0) {
      size_t e = s.find("*/", i + 2);
      i = e == std::string::npos ? s.size() : e + 2;
      out += ' ';
    } else {
      out += s[i++];
    }
  }
  return out;
}

// Names the program #defines unconditionally: at the top level, not inside an #if (the
// variant's and the point's defines, the accessors'), less those #undef'd there. A name
// defined only inside a conditional (groupnorm.cl's `#ifndef VEC / #define VEC 1`) is not
// counted: whether it is defined would take a real preprocessor, so a parameter list must
// not branch on one (the kernels' lists branch on variant defines only).
std::set<std::string> definedNames(const std::string& source) {
  static const std::regex directive(R"(^[ \t]*#[ \t]*(\w+)[ \t]*([A-Za-z_][A-Za-z0-9_]*)?)");
  std::set<std::string> names;
  std::istringstream in(source);
  std::string line;
  int depth = 0;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, directive)) continue;
    const std::string d = m[1];
    if (d == "if" || d == "ifdef" || d == "ifndef") ++depth;
    else if (d == "endif") depth = std::max(0, depth - 1);
    else if (depth == 0 && d == "define" && m[2].matched) names.insert(m[2]);
    else if (depth == 0 && d == "undef" && m[2].matched) names.erase(m[2]);
  }
  return names;
}

bool isIdentifier(const std::string& s) {
  static const std::regex id(R"(^[A-Za-z_][A-Za-z0-9_]*$)");
  return std::regex_match(s, id);
}

// True for `defined(A) || defined(B) ...` with one of them defined.
bool evalIf(const std::string& expr, const std::set<std::string>& defs, const std::string& kernel) {
  static const std::regex term(R"(^\s*defined\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$)");
  bool any = false;
  size_t start = 0;
  while (true) {
    size_t bar = expr.find("||", start);
    std::string part = expr.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
    std::smatch m;
    if (!std::regex_match(part, m, term))
      throw Error("kernel " + kernel + ": unsupported #if in its parameter list: '" + trim(expr) +
                  "' (only defined(A) || defined(B) ...)");
    any = any || defs.count(m[1]) > 0;
    if (bar == std::string::npos) break;
    start = bar + 2;
  }
  return any;
}

// The parameter list's text with its preprocessor branches resolved.
std::string resolveBranches(const std::string& list, const std::set<std::string>& defs, const std::string& kernel) {
  std::vector<std::pair<bool, bool>> stack;  // (this branch taken, some branch taken)
  auto active = [&] {
    for (const auto& [taken, _] : stack)
      if (!taken) return false;
    return true;
  };
  std::string out;
  std::istringstream in(list);
  std::string line;
  static const std::regex directive(R"(^\s*#\s*(\w+)\s*(.*)$)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, directive)) {
      if (active()) out += line + "\n";
      continue;
    }
    const std::string d = m[1], rest = trim(m[2]);
    if (d == "ifdef" || d == "ifndef" || d == "if") {
      if (d != "if" && !isIdentifier(rest))
        throw Error("kernel " + kernel + ": '#" + d + " " + rest + "' in its parameter list names no single macro");
      bool v = d == "if" ? evalIf(rest, defs, kernel) : (defs.count(rest) > 0) == (d == "ifdef");
      stack.push_back({v, v});
    } else if (d == "else") {
      if (stack.empty()) throw Error("kernel " + kernel + ": #else without #if in its parameter list");
      stack.back().first = !stack.back().second;
      stack.back().second = true;
    } else if (d == "endif") {
      if (stack.empty()) throw Error("kernel " + kernel + ": #endif without #if in its parameter list");
      stack.pop_back();
    } else {
      throw Error("kernel " + kernel + ": unsupported #" + d + " in its parameter list");
    }
  }
  if (!stack.empty()) throw Error("kernel " + kernel + ": unterminated #if in its parameter list");
  return out;
}

size_t typeBytes(std::string t, const std::string& kernel, const std::string& declared) {
  static const std::regex qual(R"(\b(const|__global|global|volatile|restrict)\b)");
  t = trim(std::regex_replace(t, qual, ""));
  static const std::pair<const char*, size_t> known[] = {
      {"float", 4}, {"float2", 8}, {"float4", 16}, {"half", 2}, {"int", 4}, {"uint", 4}, {"uchar", 1}, {"char", 1}};
  for (const auto& [name, bytes] : known)
    if (t == name) return bytes;
  throw Error("kernel " + kernel + ": unknown element type '" + t + "' in '" + declared + "'");
}

ClKernelParam parseParam(const std::string& p, const std::string& kernel) {
  static const std::regex tensor(R"(^([A-Za-z_][A-Za-z0-9_]*)_PARAMS$)");
  static const std::regex region(R"(^SD_REGION\s*\(\s*([^,]+?)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)$)");
  static const std::regex plain(R"(^(.*?)([A-Za-z_][A-Za-z0-9_]*)$)");
  std::smatch m;
  if (std::regex_match(p, m, tensor)) return {ClKernelParam::Kind::Tensor, m[1], 0, p};
  if (std::regex_match(p, m, region))
    return {ClKernelParam::Kind::Region, m[2], typeBytes(m[1], kernel, p), p};
  if (std::regex_match(p, m, plain)) {
    std::string type = trim(m[1]);
    if (type.find('*') != std::string::npos) return {ClKernelParam::Kind::Buffer, m[2], 0, p};
    static const std::regex cnst(R"(\bconst\b)");
    type = trim(std::regex_replace(type, cnst, ""));
    if (type == "int") return {ClKernelParam::Kind::Int, m[2], 0, p};
    if (type == "uint" || type == "unsigned int") return {ClKernelParam::Kind::Uint, m[2], 0, p};
    if (type == "float") return {ClKernelParam::Kind::Float, m[2], 0, p};
  }
  throw Error("kernel " + kernel + ": parameter '" + p + "' has a form sdspeed cannot bind by name");
}

}  // namespace

ClKernelSignature parseKernelSignature(const std::string& source, const std::string& kernel) {
  // The name goes into a regex: only an identifier can be a kernel's name anyway.
  if (!isIdentifier(kernel)) throw Error("'" + kernel + "' is not a kernel name (an identifier)");
  const std::string text = stripComments(source);
  const std::regex head("\\bvoid\\s+" + kernel + "\\s*\\(");
  std::smatch m;
  if (!std::regex_search(text, m, head))
    throw Error("kernel " + kernel + " is not declared in its program's source");
  // The list runs to the parenthesis that closes the one after the name.
  size_t open = static_cast<size_t>(m.position(0) + m.length(0)), i = open;
  int depth = 1;
  for (; i < text.size() && depth > 0; ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')') --depth;
  }
  if (depth != 0) throw Error("kernel " + kernel + ": its parameter list does not close");
  const std::string list = resolveBranches(text.substr(open, i - 1 - open), definedNames(text), kernel);

  ClKernelSignature sig{kernel, {}};
  std::string cur;
  depth = 0;
  auto flush = [&] {
    std::string p = trim(cur);
    // Newlines inside one parameter become spaces.
    for (char& c : p)
      if (c == '\n' || c == '\t') c = ' ';
    if (!p.empty()) sig.params.push_back(parseParam(p, kernel));
    cur.clear();
  };
  for (char c : list) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) flush();
    else cur += c;
  }
  flush();
  std::set<std::string> seen;
  for (const auto& p : sig.params)
    if (!seen.insert(p.name).second) throw Error("kernel " + kernel + " declares '" + p.name + "' twice");
  return sig;
}

}  // namespace sdspeed
