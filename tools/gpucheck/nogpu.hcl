job "nogpu" {
  type = "batch"
  group "g" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    task "t" {
      driver = "ckpt"
      config {
        command = "/opt/gc/devcheck"
        args    = ["0s"]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
