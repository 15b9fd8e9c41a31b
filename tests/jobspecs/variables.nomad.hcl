# Variables (set in variables.vars.hcl), locals, functions and file().
variable "replicas" {
  type    = number
  default = 1
}

variable "name" {
  type = string
}

variable "datacenters" {
  type    = list(string)
  default = ["*"]
}

locals {
  motd   = trimspace(file("motd.txt"))
  labels = { for dc in var.datacenters : dc => upper(dc) }
}

job "corpus-variables" {
  datacenters = var.datacenters

  meta {
    motd   = local.motd
    name   = format("%s-%02d", var.name, var.replicas)
    labels = jsonencode(local.labels)
    hash   = substr(sha256(var.name), 0, 8)
  }

  group "g" {
    count = var.replicas

    task "t" {
      driver = "mock"

      env {
        GREETING = "${local.motd} (alloc ${NOMAD_ALLOC_INDEX})"
      }
    }
  }
}
