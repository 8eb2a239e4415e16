"""The service version (one place, read by the app and /healthz)."""

VERSION = "0.1.0"
