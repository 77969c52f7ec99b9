# An inference service in the `production` class: never preempted, and only
# for tenants whose allot.classes names production. Two replicas, each with one
# GPU, registered as a Nomad-native service with an HTTP health check; rolling
# updates wait for healthy replicas.
#
#   nomad job run -var model=meta-llama/Llama-3.1-8B-Instruct jobspecs/inference.nomad.hcl
#
# The default command is vLLM's OpenAI-compatible server; any program that
# serves HTTP on $NOMAD_PORT_http and answers GET /health works.

variable "namespace" {
  type    = string
  default = "default"
}

variable "replicas" {
  type    = number
  default = 2
}

variable "model" {
  type    = string
  default = "meta-llama/Llama-3.1-8B-Instruct"
}

variable "command" {
  type    = string
  default = "vllm"
}

variable "args" {
  type        = list(string)
  default     = null
  description = "arguments; default serves var.model with vLLM"
}

variable "health_path" {
  type    = string
  default = "/health"
}

variable "cpu" {
  type    = number
  default = 1000
}

variable "memory" {
  type    = number
  default = 2048
}

job "inference" {
  namespace = var.namespace
  type      = "service"

  meta = {
    "allot.class" = "production"
  }

  update {
    max_parallel      = 1
    min_healthy_time  = "10s"
    healthy_deadline  = "10m"
    progress_deadline = "15m"
    auto_revert       = true
  }

  group "serve" {
    count = var.replicas

    # Replicas on different hosts: one node failing keeps the service up.
    spread {
      attribute = "${node.unique.id}"
    }

    network {
      port "http" {}
    }

    service {
      name     = "inference"
      provider = "nomad"
      port     = "http"

      check {
        type     = "http"
        path     = var.health_path
        interval = "10s"
        timeout  = "2s"
      }
    }

    task "server" {
      driver = "raw_exec"

      config {
        command = var.command
        args    = var.args != null ? var.args : ["serve", var.model, "--host", "${NOMAD_IP_http}", "--port", "${NOMAD_PORT_http}"]
      }

      resources {
        cpu    = var.cpu
        memory = var.memory

        device "nvidia/gpu" {
          count = 1
        }
      }
    }
  }
}
