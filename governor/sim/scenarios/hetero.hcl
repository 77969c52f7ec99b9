# A heterogeneous fleet: 24 H200 NVSwitch boxes (8 GPUs each) beside 32
# PCIe A100 nodes (4 GPUs each, two NVLink pairs) in one pool, 4 tenants.
# Run it with 1- to 8-GPU jobs and long-running 1-GPU services:
#   allotctl sim run -cluster governor/sim/scenarios/hetero.hcl -max-gpus 8 -services 40 -load 1.5
node "h200" {
  inventory  = "../../../device-plugin/inventory/examples/dev-node.hcl"
  count      = 24
  pool       = "default"
  cpu_mhz    = 128000
  memory_mib = 1048576
}

node "a100" {
  inventory  = "../../../device-plugin/inventory/examples/pcie-a100-ascend.hcl"
  count      = 32
  pool       = "default"
  cpu_mhz    = 64000
  memory_mib = 524288
}

tenant "vision" {
  load      = 0.35
  gpu_quota = 0.30
  gpu_limit = 0.60
}

tenant "nlp" {
  load      = 0.35
  gpu_quota = 0.30
  gpu_limit = 0.60
}

tenant "speech" {
  load      = 0.15
  gpu_quota = 0.25
  gpu_limit = 0.50
}

tenant "research" {
  load      = 0.15
  gpu_quota = 0.15
  gpu_limit = 0.40
}
