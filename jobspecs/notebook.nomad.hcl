# A notebook / dev environment in the `best-effort` class: it runs on GPUs
# nobody else needs and is the first thing preempted when a queued job of a
# tenant below its quota needs them. Save your work often.
#
#   nomad job run -var owner=$USER jobspecs/notebook.nomad.hcl
#   nomad service info notebook-$USER      # address and port

variable "namespace" {
  type    = string
  default = "default"
}

variable "owner" {
  type    = string
  default = "dev"
}

variable "gpus" {
  type    = number
  default = 1
}

variable "command" {
  type    = string
  default = "jupyter"
}

variable "args" {
  type        = list(string)
  default     = null
  description = "arguments; default starts JupyterLab on the allocated port"
}

variable "cpu" {
  type    = number
  default = 500
}

variable "memory" {
  type    = number
  default = 1024
}

job "notebook" {
  namespace = var.namespace
  type      = "service"

  meta = {
    "allot.class" = "best-effort"
    "owner"       = var.owner
  }

  group "notebook" {
    # A preempted notebook comes back when capacity frees up.
    reschedule {
      delay          = "30s"
      delay_function = "exponential"
      max_delay      = "10m"
      unlimited      = true
    }

    network {
      port "http" {}
    }

    service {
      name     = "notebook-${var.owner}"
      provider = "nomad"
      port     = "http"
    }

    task "jupyter" {
      driver = "raw_exec"

      config {
        command = var.command
        args = var.args != null ? var.args : [
          "lab", "--no-browser", "--ip", "${NOMAD_IP_http}", "--port", "${NOMAD_PORT_http}",
          "--notebook-dir", "${NOMAD_TASK_DIR}",
        ]
      }

      resources {
        cpu    = var.cpu
        memory = var.memory

        device "nvidia/gpu" {
          count = var.gpus
        }
      }
    }
  }
}
