"""The decoded image a device-script run saved (`sdspeed run --save-decoded`), for the
summaries of scripts/device-vulkan.sh: imported from its inline Python."""
import json
import os
import struct

import numpy as np


def decoded(results_dir, name):
    """Run NAME's decoded tensor (float32, flat) from RESULTS_DIR/NAME.safetensors; None without one."""
    path = os.path.join(results_dir, name + ".safetensors")
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    start, end = json.loads(b[8:8 + n])["decoded"]["data_offsets"]
    return np.frombuffer(b[8 + n + start:8 + n + end], dtype=np.float32)
