"""Isolation for the exec driver: cgroups, the namespaced launcher, the chroot's binds."""
