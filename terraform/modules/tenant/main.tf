# One Allot tenant: a Nomad namespace carrying the allot.* quota meta, an ACL
# policy that lets the tenant's people submit and read jobs in that namespace
# only, and optionally a token with that policy.

module "meta" {
  source = "./meta"

  cohort        = var.cohort
  weight        = var.weight
  quota         = var.quota
  limit         = var.limit
  lend          = var.lend
  classes       = var.classes
  default_class = var.default_class
  known_classes = var.known_classes
  extra_meta    = var.extra_meta
}

resource "nomad_namespace" "tenant" {
  name        = var.name
  description = var.description
  meta        = module.meta.meta
}

resource "nomad_acl_policy" "tenant" {
  name        = "tenant-${var.name}"
  description = "Submit and read jobs in namespace ${var.name} only."
  rules_hcl   = <<-EOT
    namespace "${var.name}" {
      policy       = "read"
      capabilities = ["submit-job", "dispatch-job", "read-logs", "read-fs", "alloc-lifecycle", "scale-job", "parse-job"]
    }
  EOT
}

resource "nomad_acl_token" "tenant" {
  count = var.create_token ? 1 : 0

  name           = "tenant-${var.name}"
  type           = "client"
  policies       = [nomad_acl_policy.tenant.name]
  expiration_ttl = var.token_ttl
}
