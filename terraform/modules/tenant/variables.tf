variable "name" {
  type        = string
  description = "Tenant name = Nomad namespace name."

  validation {
    condition     = can(regex("^[a-zA-Z0-9-]{1,128}$", var.name))
    error_message = "name must be a valid Nomad namespace name (letters, digits and -, at most 128)."
  }
}

variable "description" {
  type    = string
  default = ""
}

variable "cohort" {
  type        = string
  default     = "default"
  description = "Sharing group (allot.cohort)."
}

variable "weight" {
  type        = number
  default     = 1
  description = "Fair-share weight (allot.weight), > 0."
}

variable "quota" {
  type        = map(string)
  default     = {}
  description = "Nominal quota by resource (allot.quota.<res>): cpu (MHz), memory (MiB or 256GiB), gpu, npu or vendor/type/model."
}

variable "limit" {
  type        = map(string)
  default     = {}
  description = "Hard limit incl. borrowing by resource (allot.limit.<res>), at least the quota."
}

variable "lend" {
  type        = map(string)
  default     = {}
  description = "Most of the quota that may be lent out, by resource (allot.lend.<res>)."
}

variable "classes" {
  type        = list(string)
  default     = []
  description = "Classes the tenant may use (allot.classes); empty means every unrestricted class."
}

variable "default_class" {
  type        = string
  default     = null
  description = "Class of jobs that name none (allot.default-class)."
}

variable "known_classes" {
  type        = list(string)
  default     = ["production", "high", "standard", "low", "best-effort"]
  description = "Class names the governor is configured with."
}

variable "extra_meta" {
  type        = map(string)
  default     = {}
  description = "Other namespace meta (no allot.* keys)."
}

variable "create_token" {
  type        = bool
  default     = false
  description = "Create a client ACL token bound to the tenant's policy."
}

variable "token_ttl" {
  type        = string
  default     = null
  description = "Expiration TTL of the token (e.g. \"720h\"); null: no expiry."
}
