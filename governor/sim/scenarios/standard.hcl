# The standard scenario of docs/benchmarks.md: 64 nodes, each the demo
# node of `make dev` (device-plugin/inventory/examples/dev-node.hcl:
# 8 × H200 NVSwitch + 8 × Ascend 910B), and 5 tenants in one cohort.
# `allotctl sim run -nodes 1000` scales the node count.
node "h200" {
  inventory  = "../../../device-plugin/inventory/examples/dev-node.hcl"
  count      = 64
  pool       = "default"
  cpu_mhz    = 128000
  memory_mib = 1048576
}

# load: share of the submitted jobs; gpu_quota / gpu_limit: fractions of
# the cluster's GPUs written as allot.quota.gpu / allot.limit.gpu.
tenant "vision" {
  load      = 0.30
  gpu_quota = 0.25
  gpu_limit = 0.60
}

tenant "nlp" {
  load      = 0.30
  gpu_quota = 0.25
  gpu_limit = 0.60
}

tenant "speech" {
  load      = 0.15
  gpu_quota = 0.20
  gpu_limit = 0.50
}

tenant "recsys" {
  load      = 0.15
  gpu_quota = 0.20
  gpu_limit = 0.50
}

tenant "research" {
  load      = 0.10
  gpu_quota = 0.10
  gpu_limit = 0.40
}
