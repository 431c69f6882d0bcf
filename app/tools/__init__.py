"""Scripts around the app: the README screenshot and the responsiveness measurement."""
