# A service job using every placement and policy block corral acts on.
job "corpus-service" {
  region      = "global"
  namespace   = "default"
  type        = "service"
  priority    = 60
  datacenters = ["*"]
  node_pool   = "default"
  all_at_once = false

  meta {
    team = "corpus"
  }

  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  affinity {
    attribute = "${node.datacenter}"
    value     = "dc1"
    weight    = 50
  }

  spread {
    attribute = "${node.datacenter}"
    weight    = 50
  }

  update {
    max_parallel      = 1
    health_check      = "task_states"
    min_healthy_time  = "1s"
    healthy_deadline  = "1m"
    progress_deadline = "2m"
    auto_revert       = false
    canary            = 0
    stagger           = "5s"
  }

  group "web" {
    count = 2

    meta {
      tier = "front"
    }

    network {
      port "http" {}
      port "admin" {
        to = 8081
      }
    }

    restart {
      attempts = 2
      interval = "1m"
      delay    = "1s"
      mode     = "fail"
    }

    reschedule {
      attempts       = 1
      interval       = "1h"
      delay          = "5s"
      delay_function = "constant"
      max_delay      = "1m"
      unlimited      = false
    }

    migrate {
      max_parallel     = 1
      health_check     = "task_states"
      min_healthy_time = "1s"
      healthy_deadline = "1m"
    }

    ephemeral_disk {
      size = 100
    }

    disconnect {
      lost_after = "1h"
      replace    = true
      reconcile  = "best_score"
    }

    scaling {
      min = 1
      max = 4
    }

    constraint {
      distinct_hosts = false
    }

    task "server" {
      driver       = "mock"
      kill_timeout = "2s"
      kill_signal  = "SIGTERM"

      config {
        run_for = "1h"
      }

      env {
        MODE = "corpus"
      }

      meta {
        role = "server"
      }

      resources {
        cpu        = 100
        memory     = 64
        memory_max = 128
      }
    }
  }
}
