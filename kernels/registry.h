// Every kernel family sdspeed knows, by name.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/family.h"

namespace sdspeed {

const std::vector<std::unique_ptr<Family>>& allFamilies();
// Throws Error "unknown op 'x' (known: groupnorm, ...)".
const Family& findFamily(const std::string& name);

}  // namespace sdspeed
