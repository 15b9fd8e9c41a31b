"""What the commands share: the REST client, the -namespace/-region flags, output, eval monitor."""
