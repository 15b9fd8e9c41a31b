"""Plans and placement metrics between the typed structs and their stored JSON."""
