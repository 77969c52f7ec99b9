terraform {
  required_version = ">= 1.9.0"

  required_providers {
    nomad = {
      source  = "hashicorp/nomad"
      version = ">= 2.0.0, < 3.0.0"
    }
  }
}
