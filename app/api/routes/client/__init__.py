"""The client protocol and Nomad's /v1/client routes, proxied to the node that answers them."""
