# The allot.* meta of a tenant namespace, exactly as the governor reads it
# (ARCHITECTURE.md, "Tenants and quotas live in Nomad namespace meta").
# Pure computation: no provider, so tests evaluate it without one.

locals {
  # An amount: a number and an optional unit.
  amount_pattern = "^([0-9]+(?:\\.[0-9]+)?)\\s*([A-Za-z]*)$"

  # Base units per "resource:unit" (memory in MiB, cpu in MHz), as the
  # governor's quota parser scales them.
  unit_factors = {
    "memory:TiB" = 1048576
    "memory:GiB" = 1024
    "memory:MiB" = 1
    "memory:KiB" = 0.0009765625
    "memory:TB"  = 953674.31640625
    "memory:GB"  = 953.67431640625
    "memory:MB"  = 0.95367431640625
    "cpu:GHz"    = 1000
    "cpu:MHz"    = 1
  }

  meta = merge(
    var.extra_meta,
    {
      "allot.cohort" = trimspace(var.cohort)
      "allot.weight" = tostring(var.weight)
    },
    { for res, amount in var.quota : "allot.quota.${res}" => trimspace(amount) },
    { for res, amount in var.limit : "allot.limit.${res}" => trimspace(amount) },
    { for res, amount in var.lend : "allot.lend.${res}" => trimspace(amount) },
    { for c in(length(var.classes) > 0 ? [join(",", var.classes)] : []) : "allot.classes" => c },
    { for c in(var.default_class == null ? [] : [var.default_class]) : "allot.default-class" => c },
  )

  # Amounts in base units, for the cross-checks in outputs.tf. Only valid
  # amounts get here: the variables' validation rejected the others.
  quota_base = { for res, amount in var.quota : res => [for m in regexall(local.amount_pattern, trimspace(amount)) : m[1] == "" ? tonumber(m[0]) : tonumber(m[0]) * lookup(local.unit_factors, "${res}:${m[1]}", 0)][0] }
  limit_base = { for res, amount in var.limit : res => [for m in regexall(local.amount_pattern, trimspace(amount)) : m[1] == "" ? tonumber(m[0]) : tonumber(m[0]) * lookup(local.unit_factors, "${res}:${m[1]}", 0)][0] }
  lend_base  = { for res, amount in var.lend : res => [for m in regexall(local.amount_pattern, trimspace(amount)) : m[1] == "" ? tonumber(m[0]) : tonumber(m[0]) * lookup(local.unit_factors, "${res}:${m[1]}", 0)][0] }
}
