# Training on Huawei Ascend NPUs: one worker with `npus` Ascend 910B NPUs
# (ASCEND_VISIBLE_DEVICES is set by nomad-device-accel), checkpointing through
# the ckpt driver like the GPU jobs. Quotas name the NPUs as `npu` or
# `huawei/npu/Ascend910B`.
#
#   nomad job run -var script_dir=$PWD/jobspecs jobspecs/train-ascend.nomad.hcl

variable "namespace" {
  type    = string
  default = "default"
}

variable "class" {
  type    = string
  default = "standard"
}

variable "npus" {
  type    = number
  default = 8
}

variable "npu_model" {
  type    = string
  default = "Ascend910B"
}

variable "script_dir" {
  type    = string
  default = "/opt/allot/jobspecs"
}

variable "command" {
  type    = string
  default = "python3"
}

variable "args" {
  type        = list(string)
  default     = null
  description = "arguments; default runs the Python toy trainer"
}

variable "cpu" {
  type    = number
  default = 1000
}

variable "memory" {
  type    = number
  default = 2048
}

job "train-ascend" {
  namespace = var.namespace
  type      = "batch"

  meta = {
    "allot.class" = var.class
  }

  group "train" {
    reschedule {
      attempts  = 0
      unlimited = false
    }

    restart {
      attempts = 1
      mode     = "fail"
    }

    task "train" {
      driver       = "ckpt"
      kill_timeout = "150s"

      env {
        # HCCL (Huawei's collective library) settings for one node.
        HCCL_CONNECT_TIMEOUT = "600"
        RANK_SIZE            = var.npus
      }

      config {
        command = var.command
        args    = var.args != null ? var.args : ["${var.script_dir}/toy_train.py", "--steps", "100000", "--save-every", "500"]

        checkpoint {
          signal  = "SIGUSR1"
          timeout = "120s"
        }
      }

      resources {
        cpu    = var.cpu
        memory = var.memory

        device "huawei/npu" {
          count = var.npus

          constraint {
            attribute = "${device.attr.model}"
            value     = var.npu_model
          }
        }
      }
    }
  }
}
