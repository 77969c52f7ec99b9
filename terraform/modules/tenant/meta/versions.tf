terraform {
  # Validation conditions that refer to other variables need Terraform 1.9.
  required_version = ">= 1.9.0"
}
