"""What every process reads at start: its settings (CORRAL_*), its logging, its callers' TLS."""
