"""Built-in checks. Each module registers its checks with `doctor.registry.check` on import."""
