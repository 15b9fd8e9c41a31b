replicas = 2
name     = "corpus"
