# A mixed node: 4 A100 PCIe GPUs joined as two NVLink-bridged pairs, plus
# 8 Ascend 910B NPUs. With topology_grouping = "island" each pair is its own
# Nomad device group (A100-island0, A100-island1).
seed           = "a100-ascend"
driver_version = "550.54.15"
cuda_version   = "12.4"

gpu "A100" {
  count              = 4
  memory_mib         = 40960
  compute_capability = "8.0"
  power_limit_w      = 250
  topology           = "nvlink"
  islands            = [[0, 1], [2, 3]]
  numa_nodes         = [0, 0, 1, 1]
}

npu "Ascend910B" {
  count      = 8
  memory_mib = 65536
  numa_nodes = [0, 0, 0, 0, 1, 1, 1, 1]
}

unhealthy = []
