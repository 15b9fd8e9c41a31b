# A task directly in the job becomes a group of the same name; quoted numbers and
# booleans convert where a number or a bool is expected, as in Nomad.
job "corpus-solo" {
  priority = "70"

  task "solo" {
    driver = "mock"

    resources {
      cpu    = "200"
      memory = "64"
    }

    restart {
      attempts = "1"
    }
  }
}
