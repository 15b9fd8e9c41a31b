"""Values every room shares: Nomad's enumerations, domain errors, IDs, RFC 3339 times, cron specs."""
