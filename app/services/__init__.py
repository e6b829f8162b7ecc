"""Services: thin layers between HTTP/CLI and the estimation core."""
