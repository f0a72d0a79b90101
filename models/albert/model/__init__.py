"""The network: its config and presets, the layers, keyed dropout and recompute, and the model
classes (each declares its task heads). Nothing here reads or writes files: that is albert.io."""
