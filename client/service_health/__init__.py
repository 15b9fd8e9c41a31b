"""An allocation's Nomad services, their checks, and the deployment health judged from them."""
