"""The controls panel: model picker, device, modes, sampling and method controls, presets."""
