"""Built-in importers; importing this package registers each of them."""
