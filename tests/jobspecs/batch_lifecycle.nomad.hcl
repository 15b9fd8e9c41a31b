# A batch job whose tasks use every lifecycle hook.
job "corpus-lifecycle" {
  type = "batch"

  group "steps" {
    task "setup" {
      driver = "mock"
      lifecycle {
        hook    = "prestart"
        sidecar = false
      }
      config {
        run_for = "0s"
      }
    }

    task "proxy" {
      driver = "mock"
      lifecycle {
        hook    = "poststart"
        sidecar = true
      }
    }

    task "main" {
      driver = "mock"
      leader = true
      config {
        run_for   = "1s"
        exit_code = 0
      }
    }

    task "cleanup" {
      driver = "mock"
      lifecycle {
        hook = "poststop"
      }
    }
  }
}
