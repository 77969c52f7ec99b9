# Inventory for `make dev`: one node with an 8×H200 NVSwitch box and
# 8 Ascend 910B NPUs on two NUMA nodes. Format: docs/device-plugin.md.
seed           = "allot-dev"
driver_version = "550.54.15"
cuda_version   = "12.4"

gpu "H200" {
  count              = 8
  memory_mib         = 143771
  compute_capability = "9.0"
  power_limit_w      = 700
  topology           = "nvswitch"
  numa_nodes         = [0, 0, 0, 0, 1, 1, 1, 1]
}

npu "Ascend910B" {
  count      = 8
  memory_mib = 65536
  numa_nodes = [0, 0, 0, 0, 1, 1, 1, 1]
}

# Devices listed here are reported unhealthy; the file is re-read every
# fingerprint_period. Entries: a device ID or Model[i], optionally ": reason",
# e.g. "H200[3]: XID 79 (GPU fell off the bus)".
unhealthy = []
