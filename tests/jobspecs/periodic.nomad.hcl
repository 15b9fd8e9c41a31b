# A periodic batch job launched by the leader every night.
job "corpus-nightly" {
  type = "batch"

  periodic {
    crons            = ["0 3 * * *"]
    prohibit_overlap = true
    time_zone        = "UTC"
  }

  group "report" {
    task "report" {
      driver = "mock"
    }
  }
}
