#include "runtime/vulkan/spirv_access.h"

#include <map>
#include <set>

namespace sdspeed::vk {
namespace {

// SPIR-V 1.x opcodes, decorations and storage classes this walk reads (the unified
// spec's numbers; spirv.hpp is not included so the walk has no header dependency).
constexpr uint32_t kMagic = 0x07230203;
constexpr uint32_t OpTypeStruct = 30, OpTypePointer = 32, OpVariable = 59, OpDecorate = 71, OpMemberDecorate = 72,
                   OpGroupDecorate = 74, OpGroupMemberDecorate = 75;
constexpr uint32_t DecorationNonWritable = 24, DecorationBinding = 33, DecorationDescriptorSet = 34;
constexpr uint32_t StorageClassUniform = 2, StorageClassStorageBuffer = 12;

}  // namespace

std::vector<BindingAccess> storageBindingAccess(const uint32_t* words, size_t n, uint32_t bindings) {
  std::vector<BindingAccess> all(bindings, BindingAccess::Write);
  if (!words || n < 5 || words[0] != kMagic) return all;
  std::map<uint32_t, uint32_t> binding, set;      // variable id -> its decorations
  std::set<uint32_t> nonWritableVar;              // ids decorated NonWritable
  std::map<uint32_t, std::set<uint32_t>> roMembers;  // struct id -> its NonWritable members
  std::map<uint32_t, uint32_t> structMembers;     // struct id -> member count
  std::map<uint32_t, uint32_t> pointee;           // pointer type id -> pointed-to type
  std::vector<std::pair<uint32_t, uint32_t>> vars;  // (variable id, its pointer type) in a buffer class
  for (size_t i = 5; i < n;) {
    const uint32_t count = words[i] >> 16, op = words[i] & 0xffff;
    if (count == 0 || i + count > n) return all;  // malformed: every binding written
    const uint32_t* w = words + i;
    if (op == OpGroupDecorate || op == OpGroupMemberDecorate) return all;  // decoration groups: not followed
    if (op == OpDecorate && count >= 3) {
      if (w[2] == DecorationBinding && count >= 4) binding[w[1]] = w[3];
      if (w[2] == DecorationDescriptorSet && count >= 4) set[w[1]] = w[3];
      if (w[2] == DecorationNonWritable) nonWritableVar.insert(w[1]);
    } else if (op == OpMemberDecorate && count >= 4 && w[3] == DecorationNonWritable) {
      roMembers[w[1]].insert(w[2]);
    } else if (op == OpTypeStruct && count >= 2) {
      structMembers[w[1]] = count - 2;
    } else if (op == OpTypePointer && count >= 4) {
      pointee[w[1]] = w[3];
    } else if (op == OpVariable && count >= 4 &&
               (w[3] == StorageClassStorageBuffer || w[3] == StorageClassUniform)) {
      vars.emplace_back(w[2], w[1]);
    }
    i += count;
  }
  std::vector<BindingAccess> out(bindings, BindingAccess::Unused);
  for (const auto& [id, type] : vars) {
    const auto b = binding.find(id);
    if (b == binding.end()) return all;  // a buffer without a binding this walk found: assume the worst
    if (b->second >= bindings) continue;
    const auto s = set.find(id);
    if (s != set.end() && s->second != 0) continue;
    bool readOnly = nonWritableVar.count(id) != 0;
    if (!readOnly) {  // every member of its block NonWritable
      const auto p = pointee.find(type);
      const uint32_t st = p == pointee.end() ? 0 : p->second;
      const auto m = structMembers.find(st);
      const auto ro = roMembers.find(st);
      // Only the struct's own members count (a NonWritable on an index past its last
      // member, in a malformed module, must not stand in for a writable member).
      size_t roCount = 0;
      if (m != structMembers.end() && ro != roMembers.end())
        for (uint32_t idx : ro->second) roCount += idx < m->second ? 1 : 0;
      readOnly = m != structMembers.end() && m->second > 0 && roCount == m->second;
    }
    BindingAccess& a = out[b->second];
    if (!readOnly) a = BindingAccess::Write;
    else if (a == BindingAccess::Unused) a = BindingAccess::Read;
  }
  return out;
}

}  // namespace sdspeed::vk
