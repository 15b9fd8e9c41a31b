"""Bodies of the API's routes beyond Nomad's objects, as the API answers and the CLI sends them."""
