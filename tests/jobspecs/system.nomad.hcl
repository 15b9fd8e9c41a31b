# A system job: one allocation on every eligible node.
job "corpus-system" {
  type = "system"

  group "agent" {
    task "agent" {
      driver = "mock"

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
