# Blocks corral keeps but does not act on (a CSI volume and its mount among them): registration
# warns about each.
job "corpus-ignored" {
  group "g" {
    max_client_disconnect = "1h"

    volume "data" {
      type   = "csi"
      source = "data"
    }

    service {
      name = "corpus"
      port = "http"
    }

    network {
      port "http" {}
    }

    task "t" {
      driver = "mock"

      template {
        data        = <<-EOT
          key={{ env "NOMAD_ALLOC_ID" }}
        EOT
        destination = "local/app.env"
        env         = true
      }

      vault {
        policies = ["app"]
      }

      volume_mount {
        volume      = "data"
        destination = "/data"
      }
    }
  }
}
