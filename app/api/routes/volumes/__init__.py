"""Volume routes: Nomad 1.10's dynamic host volumes, and the CSI routes corral answers without
running any CSI plugin."""
