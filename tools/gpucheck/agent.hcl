name                 = "gpu1"
datacenter           = "dc1"
data_dir             = "/tmp/g/data"
log_level            = "DEBUG"
bind_addr            = "127.0.0.1"
disable_update_check = true
plugin_dir           = "/tmp/g/plugins"
ports {
  http = 4646
  rpc  = 4647
  serf = 4648
}
advertise {
  http = "127.0.0.1"
  rpc  = "127.0.0.1"
  serf = "127.0.0.1"
}
consul {
  auto_advertise   = false
  server_auto_join = false
  client_auto_join = false
}
server {
  enabled          = true
  bootstrap_expect = 1
}
client {
  enabled           = true
  network_interface = "lo"
  options = {
    "fingerprint.denylist" = "env_aws,env_gce,env_azure,env_digitalocean"
  }
  chroot_env {
    "/opt/gc"    = "/opt/gc"
    "/etc/passwd" = "/etc/passwd"
    "/etc/group"  = "/etc/group"
  }
}
plugin "nomad-device-accel" {
  config {
    backends         = ["nvml"]
    fingerprint_period = "2s"
  }
}
plugin "nomad-driver-ckpt" {
  config {
    checkpoint_root = "/tmp/g/ckpt"
  }
}
