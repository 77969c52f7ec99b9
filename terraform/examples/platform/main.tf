# Three tenants of one research cohort on a shared GPU cluster: each has a
# guaranteed share of the H200s and may borrow what the others leave idle,
# up to its limit. Serving gets the restricted production class.
#
#   export NOMAD_ADDR=http://127.0.0.1:4646 NOMAD_TOKEN=<management token>
#   terraform init && terraform apply

terraform {
  required_version = ">= 1.9.0"

  required_providers {
    nomad = {
      source  = "hashicorp/nomad"
      version = ">= 2.0.0, < 3.0.0"
    }
  }
}

# Address and token come from NOMAD_ADDR and NOMAD_TOKEN.
provider "nomad" {}

module "ml_research" {
  source = "../../modules/tenant"

  name        = "ml-research"
  description = "Research training"
  cohort      = "research"
  weight      = 2
  quota       = { gpu = 8, "nvidia/gpu/H200" = 8, cpu = "64GHz", memory = "512GiB" }
  limit       = { gpu = 16, memory = "1TiB" }
  classes     = ["high", "standard", "low", "best-effort"]
}

module "ml_serving" {
  source = "../../modules/tenant"

  name          = "ml-serving"
  description   = "Inference services"
  cohort        = "research"
  weight        = 1
  quota         = { gpu = 4, memory = "256GiB" }
  limit         = { gpu = 4 }
  lend          = { gpu = 2 }
  classes       = ["production", "standard"]
  default_class = "production"
  create_token  = true
}

module "data_eng" {
  source = "../../modules/tenant"

  name          = "data-eng"
  description   = "Evaluation and preprocessing"
  cohort        = "research"
  weight        = 1
  quota         = { gpu = 4, npu = 8, cpu = "32GHz", memory = "128GiB" }
  limit         = { gpu = 8, npu = 8 }
  default_class = "low"
}

output "namespaces" {
  value = [module.ml_research.namespace, module.ml_serving.namespace, module.data_eng.namespace]
}

output "ml_serving_token" {
  value     = module.ml_serving.token_secret_id
  sensitive = true
}
