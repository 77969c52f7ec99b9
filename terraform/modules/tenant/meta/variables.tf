# Inputs of the allot.* namespace meta, validated with the governor's rules
# (governor/quota). An amount is a string: a non-negative whole number, for
# memory optionally with a unit (256GiB, 512 MiB, 2TB; bare numbers are MiB),
# for cpu optionally MHz or GHz (bare numbers are MHz). Terraform converts
# numbers to strings, so `gpu = 8` works.

variable "cohort" {
  type        = string
  default     = "default"
  description = "Sharing group: tenants of one cohort borrow each other's unused nominal quota."

  validation {
    condition     = trimspace(var.cohort) != ""
    error_message = "cohort must not be empty."
  }
}

variable "weight" {
  type        = number
  default     = 1
  description = "Fair-share weight, > 0."

  validation {
    condition     = var.weight > 0 && var.weight <= 1000000
    error_message = "weight must be a number > 0 (at most 1e6)."
  }
}

variable "quota" {
  type        = map(string)
  default     = {}
  description = "Nominal (guaranteed) amount by resource: cpu (MHz), memory (MiB or with a unit), gpu, npu (all devices of the type) or a device vendor/type/model."

  validation {
    condition     = alltrue([for res, amount in var.quota : can(regex("^(cpu|memory|gpu|npu|[^/\\s,=]+/[^/\\s,=]+/[^/\\s,=]+)$", res))])
    error_message = "quota: unknown resource; use cpu, memory, gpu, npu or a device vendor/type/model such as nvidia/gpu/H200."
  }

  validation {
    condition     = alltrue([for res, amount in var.quota : length(regexall(local.amount_pattern, trimspace(amount))) == 1])
    error_message = "quota: an amount is a non-negative number, for memory optionally with a unit (256GiB, 512MiB, 2TB), for cpu with MHz or GHz."
  }

  validation {
    condition = alltrue(flatten([for res, amount in var.quota : [
      for m in regexall(local.amount_pattern, trimspace(amount)) : m[1] == ""
      ? can(regex("^[0-9]+$", m[0])) && tonumber(m[0]) <= 9223372036854775807
      : lookup(local.unit_factors, "${res}:${m[1]}", 0) > 0
      && floor(tonumber(m[0]) * lookup(local.unit_factors, "${res}:${m[1]}", 0)) == tonumber(m[0]) * lookup(local.unit_factors, "${res}:${m[1]}", 0)
      && tonumber(m[0]) * lookup(local.unit_factors, "${res}:${m[1]}", 0) <= 9007199254740992
    ]]))
    error_message = "quota: an amount must come to a whole number (MiB for memory, MHz for cpu, a count for devices); units: memory TiB GiB MiB KiB TB GB MB, cpu GHz MHz, none for devices."
  }
}

variable "limit" {
  type        = map(string)
  default     = {}
  description = "Hard maximum including borrowing, by resource; at least the quota. A resource missing here is bounded by what the cohort can lend."

  validation {
    condition     = alltrue([for res, amount in var.limit : can(regex("^(cpu|memory|gpu|npu|[^/\\s,=]+/[^/\\s,=]+/[^/\\s,=]+)$", res))])
    error_message = "limit: unknown resource; use cpu, memory, gpu, npu or a device vendor/type/model such as nvidia/gpu/H200."
  }

  validation {
    condition     = alltrue([for res, amount in var.limit : length(regexall(local.amount_pattern, trimspace(amount))) == 1])
    error_message = "limit: an amount is a non-negative number, for memory optionally with a unit (256GiB, 512MiB, 2TB), for cpu with MHz or GHz."
  }

  validation {
    condition = alltrue(flatten([for res, amount in var.limit : [
      for m in regexall(local.amount_pattern, trimspace(amount)) : m[1] == ""
      ? can(regex("^[0-9]+$", m[0])) && tonumber(m[0]) <= 9223372036854775807
      : lookup(local.unit_factors, "${res}:${m[1]}", 0) > 0
      && floor(tonumber(m[0]) * lookup(local.unit_factors, "${res}:${m[1]}", 0)) == tonumber(m[0]) * lookup(local.unit_factors, "${res}:${m[1]}", 0)
      && tonumber(m[0]) * lookup(local.unit_factors, "${res}:${m[1]}", 0) <= 9007199254740992
    ]]))
    error_message = "limit: an amount must come to a whole number (MiB for memory, MHz for cpu, a count for devices); units: memory TiB GiB MiB KiB TB GB MB, cpu GHz MHz, none for devices."
  }
}

variable "lend" {
  type        = map(string)
  default     = {}
  description = "At most this much of the nominal quota may be lent to the cohort, by resource; at most the quota. Default: all of it."

  validation {
    condition     = alltrue([for res, amount in var.lend : can(regex("^(cpu|memory|gpu|npu|[^/\\s,=]+/[^/\\s,=]+/[^/\\s,=]+)$", res))])
    error_message = "lend: unknown resource; use cpu, memory, gpu, npu or a device vendor/type/model such as nvidia/gpu/H200."
  }

  validation {
    condition     = alltrue([for res, amount in var.lend : length(regexall(local.amount_pattern, trimspace(amount))) == 1])
    error_message = "lend: an amount is a non-negative number, for memory optionally with a unit (256GiB, 512MiB, 2TB), for cpu with MHz or GHz."
  }

  validation {
    condition = alltrue(flatten([for res, amount in var.lend : [
      for m in regexall(local.amount_pattern, trimspace(amount)) : m[1] == ""
      ? can(regex("^[0-9]+$", m[0])) && tonumber(m[0]) <= 9223372036854775807
      : lookup(local.unit_factors, "${res}:${m[1]}", 0) > 0
      && floor(tonumber(m[0]) * lookup(local.unit_factors, "${res}:${m[1]}", 0)) == tonumber(m[0]) * lookup(local.unit_factors, "${res}:${m[1]}", 0)
      && tonumber(m[0]) * lookup(local.unit_factors, "${res}:${m[1]}", 0) <= 9007199254740992
    ]]))
    error_message = "lend: an amount must come to a whole number (MiB for memory, MHz for cpu, a count for devices); units: memory TiB GiB MiB KiB TB GB MB, cpu GHz MHz, none for devices."
  }
}

variable "known_classes" {
  type        = list(string)
  default     = ["production", "high", "standard", "low", "best-effort"]
  description = "Class names the governor is configured with (its default class table)."
}

variable "classes" {
  type        = list(string)
  default     = []
  description = "Classes the tenant may use; empty means every unrestricted class. Name `production` here to allow it."

  validation {
    condition     = alltrue([for c in var.classes : contains(var.known_classes, c)])
    error_message = "classes: every class must be one of known_classes."
  }
}

variable "default_class" {
  type        = string
  default     = null
  description = "Class of jobs that name none (the governor's default: standard)."

  validation {
    condition     = contains(var.known_classes, var.default_class == null ? "standard" : var.default_class)
    error_message = "default_class must be one of known_classes (when unset, standard must be known)."
  }
}

variable "extra_meta" {
  type        = map(string)
  default     = {}
  description = "Other namespace meta to keep next to the allot.* keys; it must not hold allot.* keys."

  validation {
    condition     = alltrue([for k, v in var.extra_meta : !can(regex("^allot[.]", k))])
    error_message = "extra_meta must not hold allot.* keys: set them through the typed variables."
  }
}
