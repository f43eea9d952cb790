"""Development tooling: local stand-ins for production parts, the demo and its fleet, the wire probe.

Installed by make in the development environment; never imported by the provider."""
