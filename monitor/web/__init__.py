"""The service's HTTP edge: exporter-toolkit web config (TLS, basic auth) and capped body reading."""
