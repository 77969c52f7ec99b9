# Many tenants: the standard scenario's 64 nodes (512 H200 GPUs) shared
# by 32 tenants in one cohort instead of 5 (issue 14, round 27). Loads
# fall as 1/rank (Zipf): the largest tenant submits 24 % of the jobs, the
# smallest 0.8 %. Quotas are 0.7 of the load share plus an equal 0.3 ÷ 32,
# so small tenants are promised more than they submit and large ones less
# (t01's rounded down so that the quotas add up to 512 GPUs exactly);
# limits are 3 × quota, at least 0.15 (76 GPUs: every tenant may borrow
# for the largest, 64-GPU gang), at most 0.5. Quotas run from 92 GPUs
# down to 8 (one node) for the nine smallest tenants. Run:
#
#   allotctl sim run -cluster governor/sim/scenarios/many.hcl -load 1.5
node "h200" {
  inventory  = "../../../device-plugin/inventory/examples/dev-node.hcl"
  count      = 64
  pool       = "default"
  cpu_mhz    = 128000
  memory_mib = 1048576
}

tenant "t01" {
  load      = 0.2464
  gpu_quota = 0.1800
  gpu_limit = 0.5000
}

tenant "t02" {
  load      = 0.1232
  gpu_quota = 0.0956
  gpu_limit = 0.2868
}

tenant "t03" {
  load      = 0.0821
  gpu_quota = 0.0669
  gpu_limit = 0.2007
}

tenant "t04" {
  load      = 0.0616
  gpu_quota = 0.0525
  gpu_limit = 0.1575
}

tenant "t05" {
  load      = 0.0493
  gpu_quota = 0.0439
  gpu_limit = 0.1500
}

tenant "t06" {
  load      = 0.0411
  gpu_quota = 0.0381
  gpu_limit = 0.1500
}

tenant "t07" {
  load      = 0.0352
  gpu_quota = 0.0340
  gpu_limit = 0.1500
}

tenant "t08" {
  load      = 0.0308
  gpu_quota = 0.0309
  gpu_limit = 0.1500
}

tenant "t09" {
  load      = 0.0274
  gpu_quota = 0.0285
  gpu_limit = 0.1500
}

tenant "t10" {
  load      = 0.0246
  gpu_quota = 0.0266
  gpu_limit = 0.1500
}

tenant "t11" {
  load      = 0.0224
  gpu_quota = 0.0251
  gpu_limit = 0.1500
}

tenant "t12" {
  load      = 0.0205
  gpu_quota = 0.0237
  gpu_limit = 0.1500
}

tenant "t13" {
  load      = 0.0190
  gpu_quota = 0.0226
  gpu_limit = 0.1500
}

tenant "t14" {
  load      = 0.0176
  gpu_quota = 0.0217
  gpu_limit = 0.1500
}

tenant "t15" {
  load      = 0.0164
  gpu_quota = 0.0209
  gpu_limit = 0.1500
}

tenant "t16" {
  load      = 0.0154
  gpu_quota = 0.0202
  gpu_limit = 0.1500
}

tenant "t17" {
  load      = 0.0145
  gpu_quota = 0.0195
  gpu_limit = 0.1500
}

tenant "t18" {
  load      = 0.0137
  gpu_quota = 0.0190
  gpu_limit = 0.1500
}

tenant "t19" {
  load      = 0.0130
  gpu_quota = 0.0185
  gpu_limit = 0.1500
}

tenant "t20" {
  load      = 0.0123
  gpu_quota = 0.0180
  gpu_limit = 0.1500
}

tenant "t21" {
  load      = 0.0117
  gpu_quota = 0.0176
  gpu_limit = 0.1500
}

tenant "t22" {
  load      = 0.0112
  gpu_quota = 0.0172
  gpu_limit = 0.1500
}

tenant "t23" {
  load      = 0.0107
  gpu_quota = 0.0169
  gpu_limit = 0.1500
}

tenant "t24" {
  load      = 0.0103
  gpu_quota = 0.0166
  gpu_limit = 0.1500
}

tenant "t25" {
  load      = 0.0099
  gpu_quota = 0.0163
  gpu_limit = 0.1500
}

tenant "t26" {
  load      = 0.0095
  gpu_quota = 0.0160
  gpu_limit = 0.1500
}

tenant "t27" {
  load      = 0.0091
  gpu_quota = 0.0158
  gpu_limit = 0.1500
}

tenant "t28" {
  load      = 0.0088
  gpu_quota = 0.0155
  gpu_limit = 0.1500
}

tenant "t29" {
  load      = 0.0085
  gpu_quota = 0.0153
  gpu_limit = 0.1500
}

tenant "t30" {
  load      = 0.0082
  gpu_quota = 0.0151
  gpu_limit = 0.1500
}

tenant "t31" {
  load      = 0.0079
  gpu_quota = 0.0149
  gpu_limit = 0.1500
}

tenant "t32" {
  load      = 0.0077
  gpu_quota = 0.0148
  gpu_limit = 0.1500
}
