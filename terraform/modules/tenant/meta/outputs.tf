output "meta" {
  description = "The namespace meta: var.extra_meta plus the allot.* keys."
  value       = local.meta

  # Rules that span variables, as the governor checks them.
  precondition {
    condition     = alltrue([for res, n in local.limit_base : n >= lookup(local.quota_base, res, 0)])
    error_message = "limit: every limit must be at least the quota of the same resource."
  }

  precondition {
    condition     = alltrue([for res, n in local.lend_base : n <= lookup(local.quota_base, res, 0)])
    error_message = "lend: every lend must be at most the quota of the same resource (a resource without quota has nothing to lend)."
  }
}
