"""What keeps a writer's work safe: atomic writes, autosave + recovery, settings and presets."""
