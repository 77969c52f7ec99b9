output "namespace" {
  description = "The tenant's Nomad namespace."
  value       = nomad_namespace.tenant.name
}

output "meta" {
  description = "The namespace meta written (allot.* keys and extra_meta)."
  value       = module.meta.meta
}

output "policy" {
  description = "Name of the tenant's ACL policy."
  value       = nomad_acl_policy.tenant.name
}

output "token_accessor_id" {
  description = "Accessor ID of the tenant token (null without create_token)."
  value       = one(nomad_acl_token.tenant[*].accessor_id)
}

output "token_secret_id" {
  description = "Secret ID of the tenant token (null without create_token)."
  value       = one(nomad_acl_token.tenant[*].secret_id)
  sensitive   = true
}
