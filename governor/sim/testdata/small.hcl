# 8 nodes of the demo node kind, 3 tenants: unit tests.
node "h200" {
  inventory  = "../../../device-plugin/inventory/examples/dev-node.hcl"
  count      = 8
  cpu_mhz    = 128000
  memory_mib = 1048576
}

tenant "a" {
  load      = 0.6
  gpu_quota = 0.4
  gpu_limit = 0.5
}

tenant "b" {
  load      = 0.3
  gpu_quota = 0.4
  gpu_limit = 0.6
}

tenant "c" {
  load      = 0.1
  gpu_quota = 0.2
  gpu_limit = 0.3
}
