# A parameterized batch job: each dispatch gets its payload in local/input.json.
job "corpus-dispatch" {
  type = "batch"

  parameterized {
    payload       = "required"
    meta_required = ["customer"]
    meta_optional = ["priority"]
  }

  group "work" {
    task "process" {
      driver = "mock"

      dispatch_payload {
        file = "input.json"
      }
    }
  }
}
