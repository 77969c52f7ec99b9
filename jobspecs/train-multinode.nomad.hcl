# Multi-node gang training: `nodes` workers of `gpus_per_node` GPUs each, every
# worker on its own host, all GPUs of a worker inside one NVSwitch domain. The
# governor admits the job only when every worker fits at once (allot.gang), so
# a half-placed job never sits on GPUs waiting for the rest.
#
#   nomad job run jobspecs/train-multinode.nomad.hcl            # 4 x 8 GPUs
#   nomad job run -var nodes=2 -var gpus_per_node=4 jobspecs/train-multinode.nomad.hcl
#
# Rendezvous: every worker registers a Nomad-native service with its rank as
# a tag; the template renders MASTER_ADDR/MASTER_PORT from rank 0 and restarts
# a worker whose rendezvous address changes. NODE_RANK is the alloc index.
# Checkpoints go to checkpoint_root, which must be shared storage here.

variable "namespace" {
  type    = string
  default = "default"
}

variable "class" {
  type    = string
  default = "high"
}

variable "nodes" {
  type        = number
  default     = 4
  description = "number of workers (hosts)"
}

variable "gpus_per_node" {
  type    = number
  default = 8
}

variable "gpu_model" {
  type    = string
  default = "H200"
}

variable "command" {
  type    = string
  default = "torchrun"
}

variable "args" {
  type        = list(string)
  default     = null
  description = "arguments; default runs train.py under torchrun with the rendezvous below"
}

variable "cpu" {
  type    = number
  default = 1000
}

variable "memory" {
  type    = number
  default = 2048
}

job "train-multinode" {
  namespace = var.namespace
  type      = "batch"

  meta = {
    "allot.class" = var.class
    "allot.gang"  = "true"
  }

  group "worker" {
    count = var.nodes

    constraint {
      operator = "distinct_hosts"
      value    = "true"
    }

    reschedule {
      attempts  = 0
      unlimited = false
    }

    restart {
      attempts = 3
      delay    = "5s"
      mode     = "fail"
    }

    network {
      port "rdzv" {}
    }

    service {
      name     = "train-multinode-rdzv"
      provider = "nomad"
      port     = "rdzv"
      tags     = ["rank-${NOMAD_ALLOC_INDEX}"]
    }

    task "train" {
      driver       = "ckpt"
      kill_timeout = "150s"

      env {
        NNODES         = var.nodes
        NPROC_PER_NODE = var.gpus_per_node
        NODE_RANK      = "${NOMAD_ALLOC_INDEX}"
      }

      template {
        destination = "local/rdzv.env"
        env         = true
        change_mode = "restart"
        data        = <<-EOT
        {{- range nomadService "train-multinode-rdzv" }}{{ if .Tags | contains "rank-0" }}
        MASTER_ADDR={{ .Address }}
        MASTER_PORT={{ .Port }}
        {{- end }}{{ end }}
        EOT
      }

      config {
        command = var.command
        args = var.args != null ? var.args : [
          "--nnodes", "${NNODES}", "--nproc-per-node", "${NPROC_PER_NODE}", "--node-rank", "${NODE_RANK}",
          "--master-addr", "${MASTER_ADDR}", "--master-port", "${MASTER_PORT}", "train.py",
        ]

        checkpoint {
          signal  = "SIGUSR1"
          timeout = "120s"
        }
      }

      resources {
        cpu    = var.cpu
        memory = var.memory

        device "nvidia/gpu" {
          count = var.gpus_per_node

          constraint {
            attribute = "${device.attr.model}"
            value     = var.gpu_model
          }

          constraint {
            attribute = "${device.attr.topology}"
            value     = "nvswitch"
          }
        }
      }
    }
  }
}
